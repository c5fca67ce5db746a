import { v5 as uuidv5 } from 'uuid';
import { decideNext, handleInBatch } from '../../../lib/app/command-handler';
import { AppError } from '../../../lib/domain/errors';
import { streams } from '../../../lib/domain/ids';
import { isSequenceItem, isUrlItem, type MediaStatus, type UploadItem, type UrlItem } from '../../../lib/domain/import';
import type { UploadReceived } from '../../../lib/domain/job';
import { projectDecider, type ProjectCommand, type ProjectState } from '../../../lib/domain/project';
import type { JobContext } from '../job-runner';
import { download } from './fetch-media';
import { describeMedia, transcriptStatus, type FileOutcome, type Source } from './media-file';
import type { ImportWorkDeps, Plan, Project } from './work';

/**
 * The files of an import, one after the other: each URL or upload item fetched (or found
 * uploaded), probed and transcribed, or found imported by an earlier attempt; its seconds
 * reserved before it joins the project, then settled and charged (in one commit: addAndSpend).
 */

/** Shares of the job's progress: files (fetch or upload, probe, transcribe) then compositions. */
export const FILES_PERCENT = 90;
/** Shares of one file's progress by phase. */
const PHASES = { fetching: [0, 0.4], probing: [0.4, 0.45], transcribing: [0.45, 1] } as const;

/** Each URL or upload item in turn, its status into `mediaStatus`; resolves the seconds imported. */
export async function importFiles(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
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
  ctx: JobContext<'import/project_media'>,
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
  // Also for a file an earlier attempt imported: a crash may have come before its settlement or its charge.
  const refused = await addAndSpend(deps, ctx, ref, outcome, seconds);
  if (refused) return { status: 'failed', error_message: refused.error_message };
  ctx.log.info({ ref, seconds, bytes: outcome.file.size_bytes, words: outcome.transcript?.word_count }, 'media file imported');
  return { status: 'success', duration_seconds: seconds, ...transcriptStatus(outcome) };
}

/** Tries of `addAndSpend` before the attempt fails (and is retried): each lost to a stream another writer moved. */
const SPEND_TRIES = 10;

/**
 * The file's seconds reserved, the file added to the project (unless an earlier attempt added
 * it), the reservation settled and the seconds charged: in one commit (`ctx.spend`), where these
 * were four awaited appends, each its own commit. A stream that moved meanwhile decides it all
 * again from the streams as they are (what was made stays made, and every step is idempotent).
 * A refusal, by the project or the balance, goes the way of one step after another
 * (`stepByStep`), which says why and gives back what must go back. Resolves the refusal, or null.
 */
async function addAndSpend(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  ref: string,
  outcome: FileOutcome,
  seconds: number,
): Promise<{ error_message: string } | null> {
  for (let tries = 0; tries < SPEND_TRIES; tries++) {
    const { state, revision } = await deps.on.projects.load(ctx.job.project_id);
    const added = state.exists && state.media.get(ref)?.job_id === ctx.job.job_id;
    const add = added ? [] : addMediaAppend(deps, ctx, outcome, state, revision);
    if (add === null) return stepByStep(deps, ctx, ref, outcome, seconds);
    const spent = await ctx
      .spend('media_seconds', ref, { amount: seconds, used: seconds, reserve: !added }, add)
      .catch((err: unknown) => (isPaymentRefusal(err) ? null : Promise.reject(err)));
    if (spent === null) return stepByStep(deps, ctx, ref, outcome, seconds);
    if (spent) return null;
  }
  throw new AppError('unavailable', `too many concurrent changes while adding ${ref}; trying again`, { retriable: true });
}

/** The file's `AddMedia` as an append on the project as read; null when the project refuses it. */
function addMediaAppend(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  { file, transcript }: FileOutcome,
  state: ProjectState,
  revision: number | null,
) {
  const command: ProjectCommand = { type: 'AddMedia', file, transcript, now: now(deps) };
  try {
    return decideNext(streams.project(ctx.job.project_id), projectDecider, state, revision, command, projectWrite(deps, ctx)).appends;
  } catch (err) {
    if (err instanceof AppError) return null; // the decider refused the file (deciding is pure: its only throw)
    throw err;
  }
}

/** Reserve, add, settle and charge, each awaited: where the project or the balance refuses the file, this says why. */
async function stepByStep(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  ref: string,
  outcome: FileOutcome,
  seconds: number,
): Promise<{ error_message: string } | null> {
  const { state } = await deps.on.projects.load(ctx.job.project_id);
  if (!(state.exists && state.media.get(ref)?.job_id === ctx.job.job_id)) {
    const refused = await reserveAndAdd(deps, ctx, ref, outcome, seconds);
    if (refused) return refused;
  }
  await ctx.settle('media_seconds', ref, seconds);
  await ctx.charge(ref, seconds);
  return null;
}

/**
 * The file's seconds are set aside before it joins the project (a retried attempt finds its
 * reservation still open); if the project refuses it, they are released and its blob goes.
 * Resolves the refusal, or null once the file is in the project.
 */
async function reserveAndAdd(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
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

/** One URL or upload item: its bytes into a blob, then probed and transcribed. The blob goes if the file fails. */
async function importFile(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
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
export const mediaAssetId = (projectId: string, ref: string): string => uuidv5(`${projectId}\n${ref}`, MEDIA_NAMESPACE);

const isPaymentRefusal = (err: unknown): err is AppError => err instanceof AppError && err.code === 'payment_required';

/** A reservation the balance cannot cover fails the file; anything else is retried. */
function paymentRefusal(err: unknown): { error_message: string } {
  if (isPaymentRefusal(err)) return { error_message: err.message };
  throw err;
}

export const now = (deps: ImportWorkDeps) => deps.clock.now().toISOString();

/** How the job writes on its project: recorded as caused by the job. */
const projectWrite = (deps: ImportWorkDeps, ctx: JobContext<'import/project_media'>) => ({
  newId: deps.ids.uuidv7,
  metadata: { partition_key: ctx.job.project_id, drive_id: ctx.job.drive_id, causation_id: ctx.job.job_id },
});

/** A command on the job's project, recorded as caused by the job, behind the job's fence (a job cancelled meanwhile changes nothing). */
export const onProject = (deps: ImportWorkDeps, ctx: JobContext<'import/project_media'>, command: ProjectCommand) =>
  handleInBatch(
    deps.store,
    { handler: deps.on.projects, decider: projectDecider, streamOf: streams.project },
    ctx.job.project_id,
    command,
    projectWrite(deps, ctx),
    { before: async () => [await ctx.fence()] },
  );

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
export function refusal(err: unknown): { error_message: string } {
  if (err instanceof AppError && !err.retriable) return { error_message: err.message };
  throw err;
}

function rethrow(err: unknown): never {
  throw err;
}
