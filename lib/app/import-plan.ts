import { invalidInput } from '../domain/errors';
import type { ImportMediaItem, ImportPlan, SequenceTrack, UploadItem } from '../domain/import';
import { isLanguageCode } from '../domain/languages';
import type { TeamAccess } from '../domain/project';

/**
 * An import request, checked: every media reference resolved against the request and the
 * project, defaults filled in. The plan is stored on the job and is all the processor reads.
 */

export type ImportRequest = {
  project_name?: string;
  project_id?: string;
  folder_name?: string;
  team_access?: TeamAccess;
  add_media?: Record<
    string,
    {
      url?: string;
      content_type?: string;
      file_size?: number;
      language?: string;
      /** `offset` defaults to 0. */
      tracks?: (Partial<SequenceTrack> & Pick<SequenceTrack, 'media'>)[];
      /** Not in the public schema: set by imports of freshly written files (partner links). */
      retry_until_found?: boolean;
    }
  >;
  /** `fps` is taken and ignored, as the public API does; a missing name is "Composition N". */
  add_compositions?: { name?: string; clips: { media: string }[]; width?: number; height?: number; fps?: number }[];
  callback_url?: string;
};

export type { ImportPlan };

/** `add_media["a b.mp4"]`: the field as the user wrote it, also for refs with dots or slashes. */
const mediaField = (ref: string) => `add_media[${JSON.stringify(ref)}]`;

export type PlanOptions = {
  /** Why a media or callback URL is refused from its text alone (an internal address), or null. */
  readonly urlRefusal?: (url: string) => string | null;
  /** Ids and expiry of a new upload item's signed URL. */
  readonly newUpload?: () => Omit<UploadItem['upload'], 'content_type' | 'file_size'>;
  /** The largest file an upload item may declare. */
  readonly maxFileBytes?: number;
  /** What the upload items of the request may declare together. */
  readonly maxUploadBytes?: number;
  /** The project's files that are images: a clip of one is refused (an image cannot be a clip). */
  readonly existingImages?: ReadonlySet<string>;
};

/** Checks every reference in the request; returns the plan or throws `invalid_input` naming the field. */
export function planImport(body: ImportRequest, existingRefs: ReadonlySet<string>, options: PlanOptions = {}): ImportPlan {
  const { urlRefusal = () => null, maxFileBytes = Number.MAX_SAFE_INTEGER, maxUploadBytes = Number.MAX_SAFE_INTEGER } = options;
  let declared = 0; // bytes of this request's upload items so far
  const refuse = (field: string, url: string) => {
    const reason = urlRefusal(url);
    if (reason) throw invalidInput(`${field}: refused: ${reason}`);
  };
  if (body.callback_url) refuse('callback_url', body.callback_url);
  // Maps, not objects: references are user-chosen names, and "constructor" must not resolve.
  const media = new Map<string, ImportMediaItem>();
  const fileRefs = new Set<string>(); // files of this request: URL and upload items
  for (const [ref, item] of Object.entries(body.add_media ?? {})) {
    const field = mediaField(ref);
    if (existingRefs.has(ref)) throw invalidInput(`${field}: media reference "${ref}" already exists in the project`);
    const kinds = [item.url !== undefined, item.content_type !== undefined || item.file_size !== undefined, item.tracks !== undefined];
    if (kinds.filter(Boolean).length !== 1)
      throw invalidInput(`${field} must have exactly one of url, content_type with file_size, or tracks`);
    if (item.language !== undefined && !isLanguageCode(item.language)) {
      throw invalidInput(`${field}.language: "${item.language}" is not an ISO 639-1 language code (such as "en" or "de")`);
    }
    if (item.tracks !== undefined && item.language !== undefined) throw invalidInput(`${field}.language: give it on the tracks' own items`);
    if (kinds[1]) {
      if (item.content_type === undefined) throw invalidInput(`${field}.content_type is required with file_size`);
      if (item.file_size === undefined) throw invalidInput(`${field}.file_size is required with content_type`);
      if (item.file_size > maxFileBytes)
        throw invalidInput(`${field}.file_size: ${item.file_size} bytes is over the limit of ${maxFileBytes}`);
      declared += item.file_size;
      if (declared > maxUploadBytes) {
        throw invalidInput(
          `${field}.file_size: the upload items of this request declare ${declared} bytes up to this one, over the limit of ${maxUploadBytes} per request: send the rest in another import`,
        );
      }
      if (!options.newUpload) throw new Error('planImport: upload items need options.newUpload');
      const upload = { ...options.newUpload(), content_type: item.content_type, file_size: item.file_size };
      media.set(ref, { upload, language: item.language ?? null });
      fileRefs.add(ref);
    }
    if (item.url !== undefined) {
      refuse(`${field}.url`, item.url);
      media.set(ref, { url: item.url, language: item.language ?? null, ...(item.retry_until_found && { retry_until_found: true }) });
      fileRefs.add(ref);
    }
  }
  for (const [ref, item] of Object.entries(body.add_media ?? {})) {
    if (!item.tracks) continue;
    const tracks = item.tracks.map((t, i) => {
      if (!fileRefs.has(t.media) && !existingRefs.has(t.media)) {
        throw invalidInput(`${mediaField(ref)}.tracks[${i}].media: "${t.media}" is not a media file of this request or project`);
      }
      return { media: t.media, offset: t.offset ?? 0 };
    });
    media.set(ref, { tracks });
  }
  const compositions = (body.add_compositions ?? []).map((c, i) => {
    c.clips.forEach((clip, j) => {
      if (!media.has(clip.media) && !existingRefs.has(clip.media)) {
        throw invalidInput(`add_compositions[${i}].clips[${j}].media: "${clip.media}" is not a media reference of this request or project`);
      }
      if (options.existingImages?.has(clip.media)) {
        throw invalidInput(`add_compositions[${i}].clips[${j}].media: "${clip.media}" is an image, and an image cannot be a clip`);
      }
    });
    const name = c.name ?? `Composition ${i + 1}`;
    return { name, clips: c.clips.map((clip) => clip.media), width: c.width ?? 1920, height: c.height ?? 1080 };
  });
  return { media: [...media], compositions };
}
