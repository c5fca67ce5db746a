import { invalidInput } from '../domain/errors';
import type { ImportMediaItem, ImportPlan } from '../domain/import';
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
    { url?: string; content_type?: string; file_size?: number; language?: string; tracks?: { media: string; offset?: number }[] }
  >;
  add_compositions?: { name: string; clips: { media: string }[]; width?: number; height?: number }[];
  callback_url?: string;
};

export type { ImportPlan };

/** `add_media["a b.mp4"]`: the field as the user wrote it, also for refs with dots or slashes. */
const mediaField = (ref: string) => `add_media[${JSON.stringify(ref)}]`;

/** Checks every reference in the request; returns the plan or throws `invalid_input` naming the field. */
export function planImport(
  body: ImportRequest,
  existingRefs: ReadonlySet<string>,
  urlRefusal: (url: string) => string | null = () => null,
): ImportPlan {
  const refuse = (field: string, url: string) => {
    const reason = urlRefusal(url);
    if (reason) throw invalidInput(`${field}: refused: ${reason}`);
  };
  if (body.callback_url) refuse('callback_url', body.callback_url);
  // Maps, not objects: references are user-chosen names, and "constructor" must not resolve.
  const media = new Map<string, ImportMediaItem>();
  const urlRefs = new Set<string>();
  for (const [ref, item] of Object.entries(body.add_media ?? {})) {
    const field = mediaField(ref);
    if (existingRefs.has(ref)) throw invalidInput(`${field}: media reference "${ref}" already exists in the project`);
    const kinds = [item.url !== undefined, item.content_type !== undefined || item.file_size !== undefined, item.tracks !== undefined];
    if (kinds.filter(Boolean).length !== 1)
      throw invalidInput(`${field} must have exactly one of url, content_type with file_size, or tracks`);
    if (kinds[1]) throw invalidInput(`${field}: upload items are not supported yet; give a url`);
    if (item.url !== undefined) {
      refuse(`${field}.url`, item.url);
      media.set(ref, { url: item.url, language: item.language ?? null });
      urlRefs.add(ref);
    }
  }
  for (const [ref, item] of Object.entries(body.add_media ?? {})) {
    if (!item.tracks) continue;
    const tracks = item.tracks.map((t, i) => {
      if (!urlRefs.has(t.media) && !existingRefs.has(t.media)) {
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
    });
    return { name: c.name, clips: c.clips.map((clip) => clip.media), width: c.width ?? 1920, height: c.height ?? 1080 };
  });
  return { media: [...media], compositions };
}
