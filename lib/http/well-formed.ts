import { invalidInput, type AppError } from '../domain/errors';
import { fieldPath } from './schemas';

/** A JSON escape of a surrogate, half of a pair or alone. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** A UTF-16 surrogate without its other half: text no UTF-8 can carry. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Refuses a parsed JSON body holding a string, or a key, that is not well-formed Unicode: JSON's
 * `\ud800` escape makes a lone surrogate, which UTF-8 cannot encode. Accepted, such a name was
 * stored, and then failed every use that encodes it (a folder's id, a file name in
 * Content-Disposition, a signed URL) as a 500. Named by its path, as the schemas name fields.
 * `text`: the body as it arrived, when the caller has it.
 */
export function assertWellFormed(value: unknown, text?: string): void {
  // UTF-8 decoding replaces bytes it cannot read, so only a `\uD800`–`\uDFFF` escape makes a
  // surrogate: a body whose text has none is not walked (the accept path's common case).
  if (text !== undefined && !SURROGATE_ESCAPE.test(text)) return;
  const pointer = illFormedPath(value, '');
  if (pointer === null) return;
  // A key that is itself ill-formed is named escaped: JSON.stringify writes a lone surrogate as \udXXX.
  throw invalidInput(`${fieldPath(pointer) || 'body'} is not valid Unicode text (it holds a lone UTF-16 surrogate, such as \\ud800)`);
}

function illFormedPath(value: unknown, at: string): string | null {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? at : null;
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = illFormedPath(value[i], `${at}/${i}`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const here = `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (LONE_SURROGATE.test(key)) return here;
    const found = illFormedPath(item, here);
    if (found !== null) return found;
  }
  return null;
}

/**
 * The 400 for a body that did not parse as a JSON object or array: JSON of another kind (`null`,
 * `"x"`, `3`) is told apart from text that is not JSON at all, which is what a client needs to
 * know to mend it.
 */
export function notJsonBody(text: unknown): AppError {
  if (typeof text === 'string' && text.length <= SCALAR_PROBE_CHARS) {
    try {
      const value: unknown = JSON.parse(text);
      // An object refused here had a `__proto__` key: not JSON as the API reads it.
      if (value === null || typeof value !== 'object') {
        return invalidInput(`request body must be a JSON object, not ${value === null ? 'null' : `a ${typeof value}`}`);
      }
    } catch {
      // not JSON at all
    }
  }
  return invalidInput('request body is not valid JSON');
}

/** Longer text is not probed: it did not start as an object or array, and no scalar the API takes is this long. */
const SCALAR_PROBE_CHARS = 4096;
