import type { Logger } from 'pino';
import { v5 as uuidv5 } from 'uuid';
import { AppError } from '../../../lib/domain/errors';
import {
  isSequenceItem,
  normalizePlan,
  uploadsOf,
  isUrlItem,
  type ImportResult,
  type MediaStatus,
  type SequenceTrack,
  type UploadItem,
  type UrlItem,
} from '../../../lib/domain/import';
import { projectUrl } from '../../../lib/domain/ids';
import type { UploadReceived } from '../../../lib/domain/job';
import type { AddMedia, CompositionEntry, MediaFile, ProjectCommand, ProjectState } from '../../../lib/domain/project';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { Clock, Ids } from '../../../lib/ports/clock';
import type { EventStore } from '../../../lib/ports/event-store';
import type { MediaProber } from '../../../lib/ports/media';
import type { OutboundFetcher } from '../../../lib/ports/outbound';
import type { Transcriber } from '../../../lib/ports/transcriber';
import type { UploadStore } from '../../../lib/ports/upload-store';
import { createComposition, DEFAULT_SIZE, wholeClips } from './compose';
import { download } from './fetch-media';
import type { ProcessorHandlers } from '../handlers';
import type { Job, JobContext, WorkOutcome } from '../job-runner';
import { describeMedia, type FileOutcome, type Source } from './media-file';

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
  /** Staged uploads, forgotten once the job has used them (the blobs stay). */
  uploads?: Pick<UploadStore, 'discard'>;
  /** The engine's stream handlers, built once per store. */
  on: ProcessorHandlers;
};

/** Shares of the job's progress: files (fetch or upload, probe, transcribe) then compositions. */
const FILES_PERCENT = 90;
/** Shares of one file's progress by phase. */
const PHASES = { fetching: [0, 0.4], probing: [0.4, 0.45], transcribing: [0.45, 1] } as const;

export async function importMedia(deps: ImportWorkDeps, ctx: JobContext): Promise<WorkOutcome> {
  const plan = normalizePlan(ctx.job.request);
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
  const created = await createCompositions(deps, ctx, plan, state);
  await discardStaged(deps, ctx, plan);
  return workOutcome(deps, ctx.job, { mediaStatus, secondsUsed, created, placeholder });
}

type Plan = ReturnType<typeof normalizePlan>;
type Project = Extract<ProjectState, { exists: true }>;

/** Every project an import creates starts with an empty placeholder composition. */
async function placeholderOf(deps: ImportWorkDeps, ctx: JobContext, before: Project): Promise<CompositionEntry | undefined> {
  const origin = `${ctx.job.job_id}#placeholder`;
  const made = before.compositions.find((c) => c.origin === origin);
  if (made || before.project.job_id !== ctx.job.job_id) return made;
  const spec = { name: before.project.name, clips: [], ...DEFAULT_SIZE };
  return (await createComposition(deps, ctx, before, origin, spec)).entry;
}

/** Each URL or upload item in turn, its status into `mediaStatus`; resolves the seconds imported. */
async function importFiles(
  deps: ImportWorkDeps,
  ctx: JobContext,
  plan: Plan,
  before: Project,
  mediaStatus: Map<string, MediaStatus>,
): Promise<number> {
  const { state: jobState } = await deps.on.jobs.load(ctx.job.job_id);
  const received = jobState.status === 'none' ? new Map() : jobState.uploads;
  const files = plan.media.filter((e): e is readonly [string, UrlItem | UploadItem] => !isSequenceItem(e[1]));
  let secondsUsed = 0;
  for (const [index, [ref, item]] of files.entries()) {
    const report = (label: string, fraction: number) =>
      void ctx.progress(`${label} ${ref}`, ((index + fraction) / files.length) * FILES_PERCENT).catch(() => undefined);
    const status = await importOne(deps, ctx, { ref, item, before, received, report });
    mediaStatus.set(ref, status);
    if (status.status === 'success') secondsUsed += status.duration_seconds;
  }
  return secondsUsed;
}

/**
 * One file: fetched (or found uploaded), or found imported by an earlier attempt; its seconds
 * reserved and the file added to the project; then settled and charged.
 */
async function importOne(
  deps: ImportWorkDeps,
  ctx: JobContext,
  one: {
    ref: string;
    item: UrlItem | UploadItem;
    before: Project;
    received: ReadonlyMap<string, UploadReceived['data']>;
    report: (label: string, fraction: number) => void;
  },
): Promise<MediaStatus> {
  const { ref } = one;
  const earlier = one.before.media.get(ref);
  const done = earlier?.job_id === ctx.job.job_id ? earlier : undefined; // imported by an earlier attempt
  const outcome: FileOutcome | { error_message: string } = done
    ? { file: { ...done, project_id: ctx.job.project_id } }
    : await importFile(deps, ctx, ref, one.item, one.received, one.report).catch((err: unknown) => failure(err, ctx.signal));
  if ('error_message' in outcome) {
    ctx.log.warn({ ref, reason: outcome.error_message }, 'media file failed');
    return { status: 'failed', error_message: outcome.error_message };
  }
  const seconds = outcome.file.duration_seconds ?? 0;
  if (!done) {
    const refused = await reserveAndAdd(deps, ctx, ref, outcome, seconds);
    if (refused) return { status: 'failed', error_message: refused.error_message };
  }
  // Also for a file an earlier attempt imported: a crash may have come before its settlement or its charge.
  await ctx.settle('media_seconds', ref, seconds);
  await ctx.charge(ref, seconds);
  ctx.log.info({ ref, seconds, bytes: outcome.file.size_bytes, words: outcome.transcript?.word_count }, 'media file imported');
  return { status: 'success', duration_seconds: seconds };
}

/**
 * The file's seconds are set aside before it joins the project (a retried attempt finds its
 * reservation still open); if the project refuses it, they are released and its blob goes.
 * Resolves the refusal, or null once the file is in the project.
 */
async function reserveAndAdd(
  deps: ImportWorkDeps,
  ctx: JobContext,
  ref: string,
  { file, transcript }: FileOutcome,
  seconds: number,
): Promise<{ error_message: string } | null> {
  const reserved = await ctx.reserve('media_seconds', ref, seconds).then(() => null, paymentRefusal);
  const added = reserved ?? (await onProject(deps, ctx, { type: 'AddMedia', file, transcript, now: now(deps) }).catch(refusal));
  if (!('error_message' in added)) return null;
  if (!reserved) await ctx.release('media_seconds', ref, added.error_message);
  await deps.blobs.delete(file.blob_key!).catch(() => undefined);
  return added;
}

/** Sequences, once their tracks' files are in: each is media of the project. Resolves the project as it then is. */
async function addSequences(
  deps: ImportWorkDeps,
  ctx: JobContext,
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
async function createCompositions(deps: ImportWorkDeps, ctx: JobContext, plan: Plan, project: ProjectState): Promise<CompositionEntry[]> {
  const created: CompositionEntry[] = [];
  let state = project;
  for (const [i, c] of plan.compositions.entries()) {
    if (!state.exists) break;
    const clips = wholeClips(state, c.clips);
    if (c.clips.length > 0 && clips.length === 0) continue; // every clip's media failed
    const made = await createComposition(deps, ctx, state, `${ctx.job.job_id}#${i}`, { ...c, clips });
    state = made.project;
    created.push(made.entry);
  }
  return created;
}

/** The staged bytes of the job's uploads, now in blobs or failed. */
async function discardStaged(deps: ImportWorkDeps, ctx: JobContext, plan: Plan): Promise<void> {
  for (const upload of uploadsOf(plan).values()) {
    await deps.uploads?.discard(upload.asset_id).catch((err: unknown) => ctx.log.warn({ err }, 'could not remove a staged upload'));
  }
}

function workOutcome(
  deps: ImportWorkDeps,
  job: Job,
  done: { mediaStatus: Map<string, MediaStatus>; secondsUsed: number; created: CompositionEntry[]; placeholder?: CompositionEntry },
): WorkOutcome {
  const statuses = [...done.mediaStatus.values()];
  const ok = statuses.filter((s) => s.status === 'success').length;
  const status = ok === statuses.length ? 'success' : ok === 0 ? 'error' : 'partial';
  const result: ImportResult = {
    status,
    // fromEntries defines own properties, so even "__proto__" stays an ordinary key.
    media_status: Object.fromEntries(done.mediaStatus),
    media_seconds_used: Math.round(done.secondsUsed * 1000) / 1000,
    created_compositions: done.created.map((c) => ({ id: c.composition_id, name: c.name })),
    ...(status === 'error' ? { error_code: 'import_failed', error_message: 'no media file could be imported; see media_status' } : {}),
  };
  // The first composition the request asked for, else the placeholder this import made.
  const shown = done.created[0] ?? done.placeholder;
  return { result, projectUrl: shown ? projectUrl(deps.webUrl, job.project_id, shown.short_id) : null };
}

const now = (deps: ImportWorkDeps) => deps.clock.now().toISOString();

/** A command on the job's project, recorded as caused by the job. */
const onProject = (deps: ImportWorkDeps, ctx: JobContext, command: ProjectCommand) =>
  deps.on.projects.handle(ctx.job.project_id, command, {
    newId: deps.ids.uuidv7,
    metadata: { partition_key: ctx.job.project_id, drive_id: ctx.job.drive_id, causation_id: ctx.job.job_id },
  });

/**
 * What a cancelled import leaves of its uploads goes: files that arrived and that its project did
 * not take in, and bytes still staged. Only where no attempt of the job can still write: for a
 * job cancelled before any attempt claimed it, or by the attempt itself once its work stopped.
 */
export async function discardUploads(deps: Pick<ImportWorkDeps, 'on' | 'blobs' | 'uploads'>, job: Job, log: Logger): Promise<void> {
  const uploads = uploadsOf(job.request);
  if (uploads.size === 0) return;
  const [{ state: jobState }, { state: project }] = await Promise.all([
    deps.on.jobs.load(job.job_id),
    deps.on.projects.load(job.project_id),
  ]);
  const inProject = new Set(project.exists ? [...project.media.values()].map((m) => m.blob_key) : []);
  const warn = (err: unknown) => log.warn({ err }, 'could not remove an upload of a cancelled job');
  let removed = 0;
  for (const [ref, upload] of uploads) {
    const received = jobState.status === 'none' ? undefined : jobState.uploads.get(ref);
    if (received && !inProject.has(received.blob_key)) {
      await deps.blobs.delete(received.blob_key).catch(warn);
      removed += 1;
    }
    await deps.uploads?.discard(upload.asset_id).catch(warn);
  }
  log.info({ uploads: uploads.size, removed_files: removed }, 'uploads of the cancelled job removed');
}

/** One URL or upload item: its bytes into a blob, then probed and transcribed. The blob goes if the file fails. */
async function importFile(
  deps: ImportWorkDeps,
  ctx: JobContext,
  ref: string,
  item: UrlItem | UploadItem,
  received: ReadonlyMap<string, UploadReceived['data']>,
  report: (label: string, fraction: number) => void,
): Promise<FileOutcome> {
  const within = (phase: keyof typeof PHASES, fraction: number) => PHASES[phase][0] + (PHASES[phase][1] - PHASES[phase][0]) * fraction;
  let source: Source;
  if (isUrlItem(item)) {
    report('downloading', 0);
    const { blobKey, size } = await download(deps, ctx, item.url, (f) => report('downloading', within('fetching', f)), {
      retryUntilFound: item.retry_until_found === true,
    });
    source = { ref, assetId: mediaAssetId(ctx.job.project_id, ref), blobKey, size, sourceUrl: item.url, language: item.language };
  } else {
    const upload = received.get(ref);
    if (!upload) throw new AppError('invalid_input', `the upload did not arrive before its URL expired at ${item.upload.expires_at}`);
    source = {
      ref,
      assetId: item.upload.asset_id,
      blobKey: upload.blob_key,
      size: upload.size_bytes,
      sourceUrl: null,
      language: item.language,
    };
  }
  try {
    return await describeMedia(deps, ctx, source, (phase, f) => report(phase, within(phase, f)));
  } catch (err) {
    await deps.blobs.delete(source.blobKey).catch(() => undefined);
    throw err;
  }
}

const MEDIA_NAMESPACE = '0b8f3f8e-5a4c-4b7e-9d2a-6c1e0f4a7b33';

/** The asset id of media that did not come as an upload: a name-based UUID of project and reference, the same on every retry. */
const mediaAssetId = (projectId: string, ref: string): string => uuidv5(`${projectId}\n${ref}`, MEDIA_NAMESPACE);

/** A reservation the balance cannot cover fails the file; anything else is retried. */
function paymentRefusal(err: unknown): { error_message: string } {
  if (err instanceof AppError && err.code === 'payment_required') return { error_message: err.message };
  throw err;
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

/**
 * A failure while fetching, storing, probing or transcribing one file becomes that file's `error_message`.
 * Cancellation, shutdown and retriable errors stop the whole attempt instead (the log redelivers).
 */
function failure(err: unknown, jobSignal: AbortSignal): { error_message: string } {
  if (jobSignal.aborted) throw err;
  // Outbound, media and transcription failures are AppErrors, and so is the download's time limit (see download).
  if (err instanceof AppError) return err.retriable ? rethrow(err) : { error_message: err.message };
  // An error outside the family (a stream or file error no adapter mapped) fails the file too.
  const e = err as Error;
  return { error_message: e?.message || 'import failed' };
}

/** A domain refusal (the reference was taken meanwhile) fails the file; anything else is retried. */
function refusal(err: unknown): { error_message: string } {
  if (err instanceof AppError && !err.retriable) return { error_message: err.message };
  throw err;
}

function rethrow(err: unknown): never {
  throw err;
}
