import { invalidInput } from '../domain/errors';
import type { Condition, Filter } from '../ports/read-store';

/**
 * Keyset pagination over (sort value, _id), newest first: a cursor is the position of the last
 * item of a page, so pages stay stable while new items arrive.
 */

export const encodeCursor = (value: string, id: string): string => Buffer.from(JSON.stringify([value, id])).toString('base64url');

export function decodeCursor(cursor: string): [string, string] {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 2 && parsed.every((x) => typeof x === 'string')) return parsed as [string, string];
  } catch {
    // fall through
  }
  throw invalidInput('cursor is not a cursor this API returned');
}

/** `base` restricted to items after the cursor in descending (field, _id) order. */
export function afterCursorDesc(base: Record<string, Condition>, field: string, cursor: [string, string]): Filter {
  const [value, id] = cursor;
  return { ...base, $or: [{ [field]: { $lt: value } }, { [field]: value, _id: { $lt: id } }] };
}
