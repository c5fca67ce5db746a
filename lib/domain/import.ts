/**
 * The import job's request and result as domain types (STYLE §13): what the command API stores
 * on `JobQueued` and what the processor records on `JobStopped`.
 */
import { compositionOrigin, firstFreeShortId } from './ids';

/**
 * A file the service fetches. `retry_until_found`: the file was written just before the import
 * (a partner's storage may not serve it yet), so a 404 or 403 is retried with backoff before the
 * file fails. Absent on items of the public API.
 */
export type UrlItem = { readonly url: string; readonly language: string | null; readonly retry_until_found?: boolean };
/** A file the caller PUTs to a signed `upload_url` until `expires_at`. */
export type UploadItem = {
  readonly upload: {
    readonly asset_id: string;
    readonly artifact_id: string;
    readonly content_type: string;
    readonly file_size: number;
    readonly expires_at: string;
  };
  readonly language: string | null;
};
/**
 * One track of a multitrack sequence: a media reference of the project that plays from `offset`
 * seconds into the sequence. The one definition: requests, events, read models and the EDL use it.
 */
export type SequenceTrack = { readonly media: string; readonly offset: number };
/** A multitrack sequence: its tracks play together, each from its offset. */
export type SequenceItem = { readonly tracks: readonly SequenceTrack[] };

export type ImportMediaItem = UrlItem | UploadItem | SequenceItem;

export const isUrlItem = (item: ImportMediaItem): item is UrlItem => 'url' in item;
export const isUploadItem = (item: ImportMediaItem): item is UploadItem => 'upload' in item;
export const isSequenceItem = (item: ImportMediaItem): item is SequenceItem => 'tracks' in item;

/** The upload items of a plan, by reference. */
export const uploadsOf = (plan: ImportPlan): ReadonlyMap<string, UploadItem['upload']> =>
  new Map(normalizePlan(plan).media.flatMap(([ref, item]) => (isUploadItem(item) ? [[ref, item.upload] as const] : [])));

/** When the last upload URL of a plan expires; undefined without upload items. Cheap: replay folds every job through it. */
export function lastUploadExpiry(plan: ImportPlan): string | undefined {
  let last: string | undefined;
  for (const [, item] of normalizePlan(plan).media) {
    if ('upload' in item && (last === undefined || item.upload.expires_at > last)) last = item.upload.expires_at;
  }
  return last;
}

/**
 * Plans stored before references became an ordered list of pairs held an object (events keep
 * them); a plan without media (a request of another shape) has none.
 */
export function normalizePlan(
  plan: ImportPlan | { media?: Record<string, ImportMediaItem>; compositions?: ImportPlan['compositions'] },
): ImportPlan {
  const media = Array.isArray(plan.media) ? plan.media : Object.entries(plan.media ?? {});
  return { ...plan, media, compositions: plan.compositions ?? [] };
}

/** The request with every reference checked and defaults filled in: all the processor reads. */
export type ImportPlan = {
  /** Media reference → item, in request order (an array of pairs: names are data, not keys). */
  readonly media: readonly (readonly [ref: string, item: ImportMediaItem])[];
  readonly compositions: readonly {
    readonly name: string;
    readonly clips: readonly string[];
    readonly width: number;
    readonly height: number;
  }[];
};

/**
 * One file's outcome. `transcript: "skipped"` (an extension of the spec's entry): the file has
 * speech to transcribe but the service runs without a transcriber (TRANSCRIBER=none), so search
 * and transcripts will find nothing in it.
 */
export type MediaStatus =
  | { readonly status: 'success'; readonly duration_seconds: number; readonly transcript?: 'skipped' }
  | { readonly status: 'failed'; readonly error_message: string };

/**
 * A clip an import's composition could not play (an extension of the result): its media failed to
 * import (`not_imported`), or is an image, which has no duration to play (`image`; known only once
 * probed, so not refused at accept).
 */
export type LeftOutClip = { readonly media: string; readonly reason: 'not_imported' | 'image' };

export type ImportResult = {
  readonly status: 'success' | 'partial' | 'error';
  readonly media_status: Readonly<Record<string, MediaStatus>>;
  readonly media_seconds_used: number;
  /** `left_out`, only when some clip was: the clips the composition was made without. */
  readonly created_compositions: readonly { readonly id: string; readonly name: string; readonly left_out?: readonly LeftOutClip[] }[];
  /** Compositions of the request not made, none of their clips being playable; absent when none. */
  readonly skipped_compositions?: readonly { readonly name: string; readonly left_out: readonly LeftOutClip[] }[];
  readonly error_code?: string;
  readonly error_message?: string;
};

/**
 * The short id the job's `project_url` ends in, known at accept so that the 201 and the job show
 * the same URL: the first composition the request asks for, else the placeholder a new project
 * starts with, each taking its first candidate whose short id is free, as `AddComposition` will
 * (the placeholder is added first). `takenShortIds`: the existing project's, or null for a new one.
 * Undefined when the import makes no composition. Should the first composition not be made (all
 * its media failed), the job's URL names the composition that was.
 */
export function shownShortId(jobId: string, plan: ImportPlan, takenShortIds: ReadonlySet<string> | null): string | undefined {
  const taken = new Set(takenShortIds ?? []);
  const take = (origin: string) => {
    const free = firstFreeShortId(origin, taken);
    if (free !== undefined) taken.add(free);
    return free;
  };
  const placeholder = takenShortIds === null ? take(compositionOrigin(jobId, 'placeholder')) : undefined;
  return plan.compositions.length > 0 ? take(compositionOrigin(jobId, 0)) : placeholder;
}
