/**
 * A user's name (a project's, a composition's) as the name of a file the API hands out: in
 * Content-Disposition, in a zip, in a signed download URL. No path separators (a header's
 * `filename` is cut at the last `/`, so "Q1/Q2 review" downloaded as "Q2 review"), no controls or
 * format characters (U+202E turns "evil_\u202Eexe.mp4" around), no characters Windows refuses, no
 * lone surrogates (which cannot be encoded, so every download of such a name was a 500), no
 * leading dots (hidden files) or trailing ones (Windows drops them), never empty.
 */
export function fileStem(name: string, fallback: string): string {
  const stem = name
    .normalize('NFC')
    .replace(/[\p{Cc}\p{Cf}\p{Cs}/\\:*?"<>|]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .replace(/^[.\s]+/, '')
    .slice(0, 120)
    .replace(/[.\s]+$/, '');
  return stem || fallback;
}

/** A whole file name (`stem.ext`) made safe as `fileStem` makes a stem; the extension kept when it is one. */
export function safeFileName(name: string, fallback: string): string {
  const ext = /\.[A-Za-z0-9]{1,5}$/.exec(name)?.[0] ?? '';
  return fileStem(name.slice(0, name.length - ext.length), fallback) + ext;
}

/** The plain `filename=` for clients without RFC 6266: accents dropped, other non-ASCII as `_`. */
export const asciiFallback = (stem: string): string =>
  stem
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .replace(/[^\x20-\x7e]/g, '_');
