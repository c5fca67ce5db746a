import type { Logger } from 'pino';
import {
  isSequenceItem,
  normalizePlan,
  uploadsOf,
  type ImportResult,
  type LeftOutClip,
  type MediaStatus,
  type SequenceTrack,
} from '../../../lib/domain/import';
import { projectUrl } from '../../../lib/domain/ids';
import type { AddMedia, CompositionEntry, MediaFile, ProjectState } from '../../../lib/domain/project';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { Clock, Ids } from '../../../lib/ports/clock';
import type { EventStore } from '../../../lib/ports/event-store';
import type { MediaProber } from '../../../lib/ports/media';
import type { OutboundFetcher } from '../../../lib/ports/outbound';
import type { Transcriber } from '../../../lib/ports/transcriber';
import type { UploadStore } from '../../../lib/ports/upload-store';
import { createComposition, DEFAULT_SIZE, wholeClips } from './compose';
import type { ProcessorHandlers } from '../handlers';
import type { Job, JobContext, WorkOutcome } from '../job-runner';
import { FILES_PERCENT, importFiles, mediaAssetId, now, onProject, refusal } from './files';
import { releaseUploads } from './uploads';

/**
 * The work of an import job: each URL or upload item is fetched (or found uploaded), probed and
 * transcribed, then sequences are assembled, then compositions made.
 */

export type ImportWorkDeps = {
  store: EventStore;
  blobs: BlobStore;
  prober: MediaProber;
  fetcher: OutboundFetcher;
  clock: Clock;
  ids: Ids;
  webUrl: string;
  mediaMaxBytes: number;
  downloadTimeoutMs: number;
  transcriber: Transcriber;
  /** Staged uploads, forgotten once the job has started (the blobs its uploads recorded stay). */
  uploads?: Pick<UploadStore, 'discard' | 'received' | 'forget'>;
  /** The engine's stream handlers, built once per store. */
  on: ProcessorHandlers;
};

export async function importMedia(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
): Promise<WorkOutcome<'import/project_media'>> {
  const plan = normalizePlan(ctx.job.request);
  await releaseUploads(deps, ctx.job, ctx.log);
  const { state: before } = await deps.on.projects.load(ctx.job.project_id);
  if (!before.exists) {
    return { result: { status: 'error', error_code: 'not_found', error_message: 'the project no longer exists' }, projectUrl: null };
  }
  const placeholder = await placeholderOf(deps, ctx, before);
  // Maps: references are user-chosen names ("constructor" is one).
  const mediaStatus = new Map<string, MediaStatus>();
  const secondsUsed = await importFiles(deps, ctx, plan, before, mediaStatus);
  await ctx.progress('composing', FILES_PERCENT);
  const state = await addSequences(deps, ctx, plan, mediaStatus);
  const composed = await createCompositions(deps, ctx, plan, state);
  await discardStaged(deps, ctx, plan);
  return workOutcome(deps, ctx.job, { mediaStatus, secondsUsed, composed, placeholder });
}

export type Plan = ReturnType<typeof normalizePlan>;
export type Project = Extract<ProjectState, { exists: true }>;

/** Every project an import creates starts with an empty placeholder composition. */
async function placeholderOf(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  before: Project,
): Promise<CompositionEntry | undefined> {
  const origin = `${ctx.job.job_id}#placeholder`;
  const made = before.compositions.find((c) => c.origin === origin);
  if (made || before.project.job_id !== ctx.job.job_id) return made;
  const spec = { name: before.project.name, clips: [], ...DEFAULT_SIZE };
  return (await createComposition(deps, ctx, before, origin, spec)).entry;
}

/** Sequences, once their tracks' files are in: each is media of the project. Resolves the project as it then is. */
async function addSequences(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  plan: Plan,
  mediaStatus: Map<string, MediaStatus>,
): Promise<ProjectState> {
  let state = (await deps.on.projects.load(ctx.job.project_id)).state;
  for (const [ref, item] of plan.media) {
    if (!isSequenceItem(item)) continue;
    const sequence = sequenceFile(state, ref, item.tracks, ctx.job.job_id);
    if ('error_message' in sequence) {
      mediaStatus.set(ref, { status: 'failed', error_message: sequence.error_message });
      continue;
    }
    const added = await onProject(deps, ctx, { type: 'AddMedia', file: sequence, now: now(deps) }).catch((err: unknown) => refusal(err));
    if ('error_message' in added) {
      mediaStatus.set(ref, { status: 'failed', error_message: added.error_message });
      continue;
    }
    state = added.state;
    mediaStatus.set(ref, { status: 'success', duration_seconds: sequence.duration_seconds ?? 0 });
  }
  return state;
}

/** The compositions the request asked for, of the media that imported. */
async function createCompositions(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  plan: Plan,
  project: ProjectState,
): Promise<Composed> {
  const composed: Composed = { created: [], skipped: [] };
  let state = project;
  for (const [i, c] of plan.compositions.entries()) {
    if (!state.exists) break;
    const { clips, leftOut } = wholeClips(state, c.clips);
    if (c.clips.length > 0 && clips.length === 0) {
      composed.skipped.push({ name: c.name, left_out: leftOut }); // no clip can play
      continue;
    }
    const made = await createComposition(deps, ctx, state, `${ctx.job.job_id}#${i}`, { ...c, clips });
    state = made.project;
    composed.created.push({ entry: made.entry, leftOut });
  }
  return composed;
}

/** The compositions an import made (with the clips each was made without) and those it could not. */
type Composed = {
  readonly created: { readonly entry: CompositionEntry; readonly leftOut: readonly LeftOutClip[] }[];
  readonly skipped: { readonly name: string; readonly left_out: readonly LeftOutClip[] }[];
};

/** The staged bytes of the job's uploads, now in blobs or failed. */
async function discardStaged(deps: ImportWorkDeps, ctx: JobContext<'import/project_media'>, plan: Plan): Promise<void> {
  for (const upload of uploadsOf(plan).values()) {
    await deps.uploads?.discard(upload.asset_id).catch((err: unknown) => ctx.log.warn({ err }, 'could not remove a staged upload'));
  }
}

function workOutcome(
  deps: ImportWorkDeps,
  job: Job<'import/project_media'>,
  done: { mediaStatus: Map<string, MediaStatus>; secondsUsed: number; composed: Composed; placeholder?: CompositionEntry },
): WorkOutcome<'import/project_media'> {
  const statuses = [...done.mediaStatus.values()];
  const ok = statuses.filter((s) => s.status === 'success').length;
  const status = ok === statuses.length ? 'success' : ok === 0 ? 'error' : 'partial';
  const result: ImportResult = {
    status,
    // fromEntries defines own properties, so even "__proto__" stays an ordinary key.
    media_status: Object.fromEntries(done.mediaStatus),
    media_seconds_used: Math.round(done.secondsUsed * 1000) / 1000,
    created_compositions: done.composed.created.map(({ entry, leftOut }) => ({
      id: entry.composition_id,
      name: entry.name,
      ...(leftOut.length > 0 && { left_out: leftOut }),
    })),
    ...(done.composed.skipped.length > 0 && { skipped_compositions: done.composed.skipped }),
    ...(status === 'error' ? { error_code: 'import_failed', error_message: 'no media file could be imported; see media_status' } : {}),
  };
  // The first composition the request asked for, else the placeholder this import made.
  const shown = done.composed.created[0]?.entry ?? done.placeholder;
  return { result, projectUrl: shown ? projectUrl(deps.webUrl, job.project_id, shown.short_id) : null };
}

/**
 * What a cancelled import leaves of its uploads goes: files that arrived and that its project did
 * not take in, and bytes still staged. Only where no attempt of the job can still write: for a
 * job cancelled before any attempt claimed it, or by the attempt itself once its work stopped.
 */
export async function discardUploads(
  deps: Pick<ImportWorkDeps, 'on' | 'blobs' | 'uploads'>,
  job: Job<'import/project_media'>,
  log: Logger,
): Promise<void> {
  const uploads = uploadsOf(job.request);
  if (uploads.size === 0) return;
  const [{ state: jobState }, { state: project }] = await Promise.all([
    deps.on.jobs.load(job.job_id),
    deps.on.projects.load(job.project_id),
  ]);
  const inProject = new Set(project.exists ? [...project.media.values()].map((m) => m.blob_key) : []);
  const warn = (err: unknown) => log.warn({ err }, 'could not remove an upload of a cancelled job');
  let removed = 0;
  for (const ref of uploads.keys()) {
    const received = jobState.status === 'none' ? undefined : jobState.uploads.get(ref);
    if (received && !inProject.has(received.blob_key)) {
      await deps.blobs.delete(received.blob_key).catch(warn);
      removed += 1;
    }
  }
  await releaseUploads(deps, job, log);
  log.info({ uploads: uploads.size, removed_files: removed }, 'uploads of the cancelled job removed');
}

function sequenceFile(
  state: ProjectState,
  ref: string,
  tracks: readonly SequenceTrack[],
  jobId: string,
): AddMedia['file'] | { error_message: string } {
  if (!state.exists) return { error_message: 'the project no longer exists' };
  const files: MediaFile[] = [];
  for (const t of tracks) {
    const m = state.media.get(t.media);
    if (!m) return { error_message: `track media "${t.media}" did not import` };
    files.push(m);
  }
  const duration = Math.max(...tracks.map((t, i) => t.offset + (files[i].duration_seconds ?? 0)));
  return {
    project_id: state.project.project_id,
    ref,
    asset_id: mediaAssetId(state.project.project_id, ref),
    media_type: 'sequence',
    duration_seconds: Math.round(duration * 1000) / 1000,
    blob_key: null,
    size_bytes: null,
    has_audio: files.some((f) => f.has_audio),
    has_video: files.some((f) => f.has_video),
    source_url: null,
    language: null,
    tracks,
    job_id: jobId,
  };
}
