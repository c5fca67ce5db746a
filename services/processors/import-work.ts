import { v5 as uuidv5 } from 'uuid';
import type { BalanceReader } from '../../lib/app/balance';
import { handleCommand, loadState } from '../../lib/app/command-handler';
import { projectDecider } from '../../lib/app/deciders';
import { AppError } from '../../lib/domain/errors';
import type { ImportMediaItem, ImportPlan, ImportResult, MediaStatus } from '../../lib/domain/import';
import { projectUrl, streams } from '../../lib/domain/ids';
import type { MediaFile, ProjectState } from '../../lib/domain/project';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';
import type { MediaProber } from '../../lib/ports/media';
import type { OutboundFetcher } from '../../lib/ports/outbound';
import { importOne, type FileOutcome } from './fetch-media';
import type { Job, JobContext, WorkOutcome } from './job-runner';

/** The work of an import job: fetch, probe and store each URL, then sequences, then compositions. */

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
  balance: BalanceReader;
};

const COMPOSITION_NAMESPACE = '5b0f2f55-6c1e-4f0e-9a43-0e4b1c2d7a10';

export async function importMedia(deps: ImportWorkDeps, ctx: JobContext): Promise<WorkOutcome> {
  const { job, signal } = ctx;
  const plan = normalizePlan(job.request);
  const projectStream = streams.project(job.project_id);
  const metadata = { partition_key: job.project_id, drive_id: job.drive_id, causation_id: job.job_id };
  const project = (c: Parameters<typeof projectDecider.decide>[0]) =>
    handleCommand(deps.store, projectStream, projectDecider, c, { newId: deps.ids.uuidv7, metadata });
  const now = () => deps.clock.now().toISOString();

  const { state: before } = await loadState(deps.store, projectStream, projectDecider);
  if (!before.exists) {
    return { result: { status: 'error', error_code: 'not_found', error_message: 'the project no longer exists' }, projectUrl: null };
  }
  // Maps: references are user-chosen names ("constructor" is one).
  const mediaStatus = new Map<string, MediaStatus>();
  const urlRefs = plan.media.filter((e): e is readonly [string, { url: string; language: string | null }] => 'url' in e[1]);
  let secondsUsed = 0;

  for (const [index, [ref, item]] of urlRefs.entries()) {
    const earlier = before.media.get(ref);
    const done = earlier?.job_id === job.job_id ? earlier : undefined; // imported by an earlier attempt
    const report = (fraction: number) => ctx.progress(`importing ${ref}`, ((index + fraction) / urlRefs.length) * 90);
    await report(0);
    const outcome: Omit<MediaFile, 'imported_at'> | { error_message: string } =
      done ?? (await importOne(deps, ctx, ref, item, report).catch((err: unknown) => failure(err, signal)));
    if ('error_message' in outcome) {
      mediaStatus.set(ref, { status: 'failed', error_message: outcome.error_message });
      ctx.log.warn({ ref, reason: outcome.error_message }, 'media file failed');
      continue;
    }
    if (!done) {
      const shortfall = await balanceShortfall(deps, job, outcome.duration_seconds ?? 0, secondsUsed);
      if (shortfall) {
        await deps.blobs.delete(outcome.blob_key!).catch(() => undefined);
        mediaStatus.set(ref, { status: 'failed', error_message: shortfall });
        continue;
      }
      const added = await project({ type: 'AddMedia', file: { ...outcome, project_id: job.project_id }, now: now() }).catch(
        (err: unknown) => refusal(err),
      );
      if ('error_message' in added) {
        await deps.blobs.delete(outcome.blob_key!).catch(() => undefined);
        mediaStatus.set(ref, { status: 'failed', error_message: added.error_message });
        continue;
      }
    }
    const seconds = outcome.duration_seconds ?? 0;
    // Also for a file an earlier attempt imported: a crash may have come before its charge.
    await ctx.charge(ref, seconds);
    secondsUsed += seconds;
    mediaStatus.set(ref, { status: 'success', duration_seconds: seconds });
    ctx.log.info({ ref, seconds, bytes: outcome.size_bytes }, 'media file imported');
  }

  await ctx.progress('assembling', 95);
  let state = (await loadState(deps.store, projectStream, projectDecider)).state;
  for (const [ref, item] of plan.media) {
    if (!('tracks' in item)) continue;
    const sequence = sequenceFile(state, ref, item.tracks, job.job_id);
    if ('error_message' in sequence) {
      mediaStatus.set(ref, { status: 'failed', error_message: sequence.error_message });
      continue;
    }
    const added = await project({ type: 'AddMedia', file: sequence, now: now() }).catch((err: unknown) => refusal(err));
    if ('error_message' in added) {
      mediaStatus.set(ref, { status: 'failed', error_message: added.error_message });
      continue;
    }
    state = added.state;
    mediaStatus.set(ref, { status: 'success', duration_seconds: sequence.duration_seconds ?? 0 });
  }

  const created: { id: string; name: string; short_id: string }[] = [];
  for (const [i, c] of plan.compositions.entries()) {
    const imported = c.clips.filter((ref) => state.exists && state.media.has(ref));
    if (c.clips.length > 0 && imported.length === 0) continue; // every clip's media failed
    const origin = `${job.job_id}#${i}`;
    const candidateIds = Array.from({ length: 16 }, (_, n) => uuidv5(`${origin}#${n}`, COMPOSITION_NAMESPACE));
    const r = await project({
      type: 'CreateComposition',
      origin,
      name: c.name,
      clipMedia: imported,
      width: c.width,
      height: c.height,
      candidateIds,
      now: now(),
    });
    state = r.state;
    const made = state.exists ? state.compositions.find((x) => x.origin === origin) : undefined;
    if (made) created.push({ id: made.composition_id, name: made.name, short_id: made.short_id });
  }

  const statuses = [...mediaStatus.values()];
  const ok = statuses.filter((s) => s.status === 'success').length;
  const status = ok === statuses.length ? 'success' : ok === 0 ? 'error' : 'partial';
  const result: ImportResult = {
    status,
    // fromEntries defines own properties, so even "__proto__" stays an ordinary key.
    media_status: Object.fromEntries(mediaStatus),
    media_seconds_used: Math.round(secondsUsed * 1000) / 1000,
    created_compositions: created.map(({ id, name }) => ({ id, name })),
    ...(status === 'error' ? { error_code: 'import_failed', error_message: 'no media file could be imported; see media_status' } : {}),
  };
  const url = created[0] ? projectUrl(deps.webUrl, job.project_id, created[0].short_id) : null;
  return { result, projectUrl: url };
}

/**
 * Why the drive cannot take `seconds` more media, or null when it can. `chargedHere` is what this
 * job has charged so far: the balance read model may not have seen those charges yet.
 */
async function balanceShortfall(deps: ImportWorkDeps, job: Job, seconds: number, chargedHere: number): Promise<string | null> {
  const left = await deps.balance.left(job.drive_id, { jobId: job.job_id, chargedByJob: chargedHere });
  if (left === null || left >= seconds) return null;
  return `not enough media seconds: the file is ${seconds} s long and the drive has ${Math.max(0, Math.floor(left))} s left`;
}

/** Plans stored before references became an ordered list of pairs held an object. */
function normalizePlan(
  plan: ImportPlan | { media: Record<string, ImportMediaItem>; compositions: ImportPlan['compositions'] },
): ImportPlan {
  return Array.isArray(plan.media) ? (plan as ImportPlan) : { ...plan, media: Object.entries(plan.media) };
}

function sequenceFile(
  state: ProjectState,
  ref: string,
  tracks: readonly { readonly media: string; readonly offset: number }[],
  jobId: string,
): FileOutcome | { error_message: string } {
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
 * A failure while fetching, storing or probing one file becomes that file's `error_message`.
 * Cancellation, shutdown and retriable errors stop the whole attempt instead (the log redelivers).
 */
function failure(err: unknown, jobSignal: AbortSignal): { error_message: string } {
  if (jobSignal.aborted) throw err;
  if (err instanceof AppError) return err.retriable ? rethrow(err) : { error_message: err.message };
  // The download's time limit arrives here as an AppError naming the limit (see importOne).
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
