/**
 * Stable file names for a project's media in timeline exports and bundles: the same project gives
 * the same names on every export, so a timeline exported again relinks to media downloaded before.
 * A reference is free text ("Interview/cam 1", "constructor"); the name keeps its readable ASCII,
 * replaces the rest with `_`, keeps or adds an extension, and numbers the names that would collide
 * (in the project's media order, compared without case: macOS and Windows disks ignore it).
 */

const DEFAULT_EXTENSION: ReadonlyMap<string, string> = new Map([
  ['video', '.mp4'],
  ['audio', '.m4a'],
  ['image', '.png'],
]);

const MAX_STEM = 80;

/** `ref → file name` for every media reference, in the order given. */
export function stableFileNames(media: readonly { readonly ref: string; readonly type: string }[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const m of media) {
    const { stem, extension } = safeParts(m.ref, DEFAULT_EXTENSION.get(m.type) ?? '.bin');
    let name = stem + extension;
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${stem}-${n}${extension}`;
    taken.add(name.toLowerCase());
    names.set(m.ref, name);
  }
  return names;
}

function safeParts(ref: string, fallbackExtension: string): { stem: string; extension: string } {
  const ascii = ref
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // accents off: "é" → "e"
    .replace(/[^A-Za-z0-9._-]+/g, '_');
  const ext = /\.([A-Za-z0-9]{1,5})$/.exec(ascii);
  const extension = ext ? `.${ext[1].toLowerCase()}` : fallbackExtension;
  const stem =
    (ext ? ascii.slice(0, -ext[0].length) : ascii)
      .replace(/^[._-]+|[._-]+$/g, '') // no hidden files, no "..", no trailing dots Windows drops
      .slice(0, MAX_STEM) || 'media';
  return { stem, extension };
}
