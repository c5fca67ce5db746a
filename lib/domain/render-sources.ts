import type { MediaFile } from './project';
import type { RenderMedia, RenderSource } from './render-plan';

/**
 * The project's media as a render reads them (issue 21): each file's blob and the properties
 * stored at import; a sequence as its tracks. A file without a blob, of a kind a render cannot
 * show (`other`), or a sequence with a track that is not such a file, is left out: the caller
 * refuses a composition naming one (`missingMedia`) before it plans the render.
 */
export function renderMediaOf(media: ReadonlyMap<string, MediaFile>): Map<string, RenderMedia> {
  const out = new Map<string, RenderMedia>();
  for (const [ref, file] of media) {
    if (file.tracks) {
      const tracks = file.tracks.map((t) => ({ source: sourceOf(media.get(t.media)), offset: t.offset }));
      if (tracks.every((t): t is { source: RenderSource; offset: number } => t.source !== null)) out.set(ref, { kind: 'sequence', tracks });
    } else {
      const source = sourceOf(file);
      if (source) out.set(ref, source);
    }
  }
  return out;
}

/** The media references of `clips` a render cannot read, each once, in clip order. */
export const missingMedia = (clips: readonly { readonly media: string }[], media: ReadonlyMap<string, RenderMedia>): string[] => [
  ...new Set(clips.map((c) => c.media).filter((ref) => !media.has(ref))),
];

/**
 * Whether a clip list has a picture to publish as Video (SPEC: POST /jobs/publish, media_type):
 * a clip of a video or image file, or of a sequence with such a track. Decided by the media type
 * stored at import, not by `has_video`, which an image does not set. A reference the project
 * does not know shows nothing.
 */
export const hasVideoContent = (clips: readonly { readonly media: string }[], media: ReadonlyMap<string, MediaFile>): boolean =>
  clips.some((c) => showsPicture(media, c.media, 0));

function showsPicture(media: ReadonlyMap<string, MediaFile>, ref: string, depth: number): boolean {
  const file = media.get(ref);
  // A sequence's tracks are files (the import refuses others); the bound only guards a malformed history.
  if (!file || depth > 4) return false;
  if (file.tracks) return file.tracks.some((t) => showsPicture(media, t.media, depth + 1));
  return file.media_type === 'video' || file.media_type === 'image';
}

function sourceOf(file: MediaFile | undefined): RenderSource | null {
  if (!file?.blob_key || file.tracks) return null;
  const kind = file.media_type;
  if (kind !== 'video' && kind !== 'audio' && kind !== 'image') return null;
  return {
    blob: file.blob_key,
    kind,
    hasAudio: file.has_audio,
    width: file.width ?? null,
    height: file.height ?? null,
    rotation: file.rotation ?? null,
    frameRate: file.frame_rate ?? null,
  };
}
