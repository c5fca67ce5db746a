import { invalidInput } from '../domain/errors';
import type { Condition, Doc, Filter, FindOptions, ReadQueries } from '../ports/read-store';

/**
 * Keyset pagination over (sort field, _id): a cursor is the position of the last item of a page,
 * so walking the pages returns each item once even while items are added. The cursor names the
 * sort it belongs to, so it cannot be replayed against another. A field may be null (a project
 * never viewed): nulls come first ascending and last descending, as the ReadStore orders them.
 */

export type Direction = 'asc' | 'desc';
type Position = {
  readonly sort: string;
  readonly direction: Direction;
  readonly value: string | number | null;
  readonly id: string;
  /** The list it pages (the collection); cursors made before it was named have none. */
  readonly list?: string;
};

export const encodeCursor = (p: Position): string =>
  Buffer.from(JSON.stringify([p.sort, p.direction, p.value, p.id, ...(p.list === undefined ? [] : [p.list])])).toString('base64url');

/** A sort by a time (`created_at`, `updated_at`, `last_viewed_at`) pages by ISO 8601 text, or null; others by text, a number, or null. */
const isTimeSort = (sort: string) => sort.endsWith('_at');
const fitsSort = (sort: string, value: unknown): boolean =>
  value === null ||
  (typeof value === 'string' && (!isTimeSort(sort) || Number.isFinite(Date.parse(value)))) ||
  (typeof value === 'number' && Number.isFinite(value) && !isTimeSort(sort));

export function decodeCursor(cursor: string, expected: { sort: string; direction: Direction; list?: string }): Position {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  if (
    Array.isArray(parsed) &&
    (parsed.length === 4 || (parsed.length === 5 && typeof parsed[4] === 'string')) &&
    typeof parsed[0] === 'string' &&
    (parsed[1] === 'asc' || parsed[1] === 'desc') &&
    fitsSort(parsed[0], parsed[2]) &&
    typeof parsed[3] === 'string'
  ) {
    const [sort, direction, value, id, list] = parsed as [string, Direction, string | number | null, string, string?];
    if (list !== undefined && expected.list !== undefined && list !== expected.list) {
      throw invalidInput(`cursor belongs to another list (${list}); give a cursor this list returned, or no cursor`);
    }
    if (sort !== expected.sort || direction !== expected.direction) {
      throw invalidInput(`cursor belongs to sort=${sort}&direction=${direction}; give the same sort and direction, or no cursor`);
    }
    return { sort, direction, value, id, ...(list !== undefined && { list }) };
  }
  throw invalidInput('cursor is not a cursor this API returned');
}

/** `base` restricted to the items after `p` in (field, _id) order. */
export function afterCursor(base: Readonly<Record<string, Condition>>, field: string, p: Position): Filter {
  const { value, id } = p;
  if (p.direction === 'asc') {
    const or: Filter[] =
      value === null
        ? [{ [field]: null, _id: { $gt: id } }, { [field]: { $ne: null } }]
        : [{ [field]: { $gt: value } }, { [field]: value, _id: { $gt: id } }];
    return { ...base, $or: or };
  }
  // In `$or`, not beside `base`: `base` may hold its own condition on the same field.
  if (value === null) return { ...base, $or: [{ [field]: null, _id: { $lt: id } }] };
  return { ...base, $or: [{ [field]: { $lt: value } }, { [field]: value, _id: { $lt: id } }, { [field]: null }] };
}

/**
 * One page of `collection` matching `base`, sorted by `field` then `_id` in `direction`, after
 * `cursor`; `next_cursor` is absent on the last page.
 */
export async function findPage(
  read: ReadQueries,
  collection: string,
  base: Readonly<Record<string, Condition>>,
  page: { sort: string; field?: string; direction: Direction; limit: number; cursor?: string },
): Promise<{ docs: Doc[]; next_cursor?: string }> {
  const field = page.field ?? page.sort;
  const d = page.direction === 'asc' ? 1 : -1;
  const filter = page.cursor ? afterCursor(base, field, decodeCursor(page.cursor, { ...page, list: collection })) : base;
  const options: FindOptions = {
    sort: [
      [field, d],
      ['_id', d],
    ],
    limit: page.limit + 1,
  };
  const docs = await read.find(collection, filter, options);
  const shown = docs.slice(0, page.limit);
  const last = shown[shown.length - 1];
  if (docs.length <= page.limit || !last) return { docs: shown };
  const value = last[field];
  return {
    docs: shown,
    next_cursor: encodeCursor({
      sort: page.sort,
      direction: page.direction,
      // The fields the API pages by hold strings, numbers or null.
      value: typeof value === 'string' || typeof value === 'number' ? value : null,
      id: last._id,
      list: collection,
    }),
  };
}
