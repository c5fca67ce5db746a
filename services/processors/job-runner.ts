import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { commandHandler, decideNext, type HandleResult, type HandlerOf } from '../../lib/app/command-handler';
import { jobDecider } from '../../lib/domain/job';
import { AppError } from '../../lib/domain/errors';
import {
  CLAIM_HELD,
  failedAttempts,
  type JobCommand,
  type JobEvent,
  type JobResultOf,
  type JobState,
  type JobType,
} from '../../lib/domain/job';
import { streams } from '../../lib/domain/ids';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventStore, StreamAppend } from '../../lib/ports/event-store';
import type { Balances } from '../../lib/app/balances';
import type { BalanceKind } from '../../lib/domain/balance';
import type { Job } from './job-type';

/**
 * Runs one job under a claim: claim it (a lease on the job stream), do the work while renewing
 * the lease and watching for cancellation or a later claim, stop it exactly once. Every write of
 * the attempt names the attempt, so a worker that lost its claim (rebalance, a second worker, a
 * lease that lapsed while it was cut off) records nothing and stops.
 */

export type { Job };

/** What a job's work ends with: its type's result (or a failure), and the project URL to show. */
export type WorkOutcome<T extends JobType = JobType> = { result: JobResultOf<T>; projectUrl: string | null };

export interface JobContext<T extends JobType = JobType> {
  readonly job: Job<T>;
  readonly attempt: number;
  /** Aborted when the job is cancelled, the claim is lost, or the process shuts down. */
  readonly signal: AbortSignal;
  /** Records progress (throttled: at most one event a second unless the label changes). */
  progress(label: string, percent: number): Promise<void>;
  /** Records media seconds consumed by `ref`, once per job and reference. */
  charge(ref: string, seconds: number): Promise<void>;
  /**
   * Sets `amount` of the drive's balance aside for `what` before the work that spends it, or
   * with `atLeast` what is left when that is less; refused with a `payment_required` AppError
   * when the balance cannot cover it. Reserving again for the same `what` (a retried attempt)
   * takes nothing more. Resolves what the reservation holds.
   */
  reserve(kind: BalanceKind, what: string, amount: number, atLeast?: number): Promise<number>;
  /** Settles the reservation for `what` at what was used (at most what was reserved). */
  settle(kind: BalanceKind, what: string, used: number): Promise<void>;
  /** Gives the reservation for `what` back unused. What a job still holds when it ends is given back by the engine. */
  release(kind: BalanceKind, what: string, reason: string): Promise<void>;
  /**
   * What `charge` (for `what` as the reference), `reserve` (unless `spent.reserve` is false: held
   * already), the appends of `between` and `settle` do one after the other, in one commit
   * (Balances.reserveAndSettle), behind the attempt's fence (`fence`: the charge is it when due).
   * Refused like `reserve`, before anything is appended. Resolves false when a stream moved
   * meanwhile: what came before it was made; decide again. Throws the signal's reason once the
   * job is cancelled or the claim lost: nothing of the batch is written then.
   */
  spend(
    kind: BalanceKind,
    what: string,
    spent: { amount: number; used: number; reserve: boolean },
    between: StreamAppend[],
  ): Promise<boolean>;
  /**
   * The append to put first in a batch that changes what the job is for (a project, a balance):
   * an event on the job stream expecting the revision read now (a progress event, or `charge`
   * when given and due). Cancelling appends to the job stream, so once the job is cancelled (or
   * another attempt claimed it) after this read, the batch fails at its first append and nothing
   * of it is written (decide again: the next `fence` throws). Throws the signal's reason when the
   * job is cancelled or the claim lost already. So a job read as `cancelled` changes nothing more.
   */
  fence(charge?: { readonly ref: string; readonly seconds: number }): Promise<StreamAppend>;
  readonly log: Logger;
}

/** What operators see of jobs (metrics); optional. */
export interface JobObserver {
  started(job: Job): void;
  finished(job: Job, outcome: 'success' | 'partial' | 'error' | 'cancelled' | 'lost' | 'interrupted', seconds: number): void;
}

export type RunnerDeps = {
  store: EventStore;
  /** The drives' balances: jobs reserve before they spend, and what a job holds when it ends is released. */
  balances: Balances;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  /** Aborted on shutdown: running work stops, its claim is released, and the job resumes elsewhere. */
  shutdown: AbortSignal;
  /** Who claims: stable across restarts of the same worker, distinct between live workers. */
  workerId: string;
  leaseMs?: number;
  cancelPollMs?: number;
  maxAttempts?: number;
  observer?: JobObserver;
  /** The job streams' handler, built once by the engine (`start`); a runner without one builds its own for each run. */
  jobs?: HandlerOf<typeof jobDecider>;
};

/** The reservation a job's `ctx.reserve(kind, what, …)` holds on its drive's balance stream. */
export const reservationIdOf = (jobId: string, kind: BalanceKind, what: string): string => `${jobId}:${kind}:${what}`;

export class ClaimLost extends Error {
  constructor(jobId: string) {
    super(`job ${jobId}: another worker holds the claim now`);
    this.name = 'ClaimLost';
  }
}

const DEFAULT_LEASE_MS = 15_000;
/**
 * `afterCancel` runs when a cancellation stopped the attempt, once its work has stopped: what the
 * work left that only this job needed can go then, as no attempt of the job writes any more.
 * `progressGraceMs`: progress in the attempt's first milliseconds is held (see `progress` below).
 */
export async function runJob<T extends JobType>(
  deps: RunnerDeps,
  job: Job<T>,
  work: (ctx: JobContext<T>) => Promise<WorkOutcome<T>>,
  afterCancel?: (job: Job<T>, log: Logger) => Promise<void>,
  progressGraceMs = 0,
): Promise<void> {
  const jobs = deps.jobs ?? commandHandler(deps.store, jobDecider, streams.job);
  const log = deps.logger.child({ job_id: job.job_id, job_type: job.job_type, worker: deps.workerId });
  const metadata = { partition_key: job.project_id, drive_id: job.drive_id, causation_id: job.job_id };
  const command = (c: JobCommand) => jobs.handle(job.job_id, c, { newId: deps.ids.uuidv7, metadata });
  const now = () => deps.clock.now().toISOString();
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;

  const started = await claim(deps, job, command, leaseMs, log);
  if (!started) return;
  const { attempt } = started;
  if (failedAttempts(started) >= (deps.maxAttempts ?? 3)) {
    log.error({ attempt, last_failure: started.lastFailure }, 'job failed on every attempt; stopping it with an error');
    const reason = started.lastFailure ? `; the last: ${started.lastFailure}` : '';
    const result = {
      status: 'error',
      // A server the job needs that kept failing (a model server, a transcriber) is not our bug.
      error_code: started.lastFailureCode === 'unavailable' ? 'unavailable' : 'internal_error',
      error_message: `the job failed repeatedly and was given up${reason}`,
    } as const;
    await command({ type: 'StopJob', attempt, result, projectUrl: null, now: now() });
    await releaseHeld(deps, job, 'the job failed repeatedly and was given up', log);
    deps.observer?.finished(job, 'error', 0);
    return;
  }
  log.info({ attempt }, 'job started');
  deps.observer?.started(job);
  const startedAt = Date.now();
  const elapsed = () => (Date.now() - startedAt) / 1000;

  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, deps.shutdown]);
  let renewedAt = Date.now();
  let leaseUntil = Date.now() + leaseMs;
  /** Aborts the attempt when the job as read is cancelled or claimed by another attempt; whether it did. */
  const stopUnlessHeld = (state: JobState): boolean => {
    if (state.status === 'cancelled') stop.abort(new Error('job cancelled'));
    else if (state.status !== 'none' && state.attempt !== attempt) stop.abort(new ClaimLost(job.job_id));
    return stop.signal.aborted;
  };
  const watch = async () => {
    const { state } = await jobs.load(job.job_id);
    if (stopUnlessHeld(state)) return;
    if (Date.now() - renewedAt >= leaseMs / 3) {
      const renewed = await command({ type: 'RenewLease', attempt, leaseMs, now: now() });
      if (renewed.events.length > 0) {
        renewedAt = Date.now();
        leaseUntil = renewedAt + leaseMs;
      }
    }
  };
  const watcher = setInterval(() => {
    watch().catch((err: unknown) => {
      // Cut off from the store: past our lease another worker may take over, so stop first.
      if (Date.now() > leaseUntil - leaseMs / 3) stop.abort(new ClaimLost(job.job_id));
      log.warn({ err }, 'could not check the job or renew its claim');
    });
  }, deps.cancelPollMs ?? 500);

  let lastProgress = { at: 0, label: '', percent: -1 };
  // Work reports progress without waiting for it; a write decided on the job stream waits for these first.
  let progressWrites: Promise<unknown> = Promise.resolve();
  // Progress in the attempt's first `progressGraceMs` is held, and only the newest is written when
  // the grace ends: a job done within it (an agent turn, a republish) writes none, since nobody
  // polls fast enough to see it and each is an fsynced append on the job's path.
  let held: { label: string; percent: number } | null = null;
  let graceTimer: NodeJS.Timeout | undefined;
  const writeHeld = () => {
    const h = held;
    held = null;
    // Written as is, not through `progress`: a timer may fire a millisecond before `Date.now()` says
    // the grace is over, and held again, the progress would never be written.
    if (h && !stop.signal.aborted)
      void writeProgress(h.label, h.percent).catch((err: unknown) => log.debug({ err }, 'held progress not written'));
  };
  const progress = async (label: string, percent: number): Promise<void> => {
    const sinceStart = Date.now() - startedAt;
    if (sinceStart < progressGraceMs) {
      held = { label, percent };
      graceTimer ??= setTimeout(writeHeld, progressGraceMs - sinceStart);
      return;
    }
    await writeProgress(label, percent);
  };
  const writeProgress = async (label: string, percent: number): Promise<void> => {
    const t = deps.clock.now().getTime();
    const rounded = Math.round(percent);
    if (label === lastProgress.label && (t - lastProgress.at < 1000 || rounded === lastProgress.percent)) return;
    lastProgress = { at: t, label, percent: rounded };
    const written = command({ type: 'ReportProgress', attempt, label, percent: rounded, now: now() });
    progressWrites = Promise.all([progressWrites, written.catch(() => undefined)]);
    await written;
  };
  const charge = async (ref: string, seconds: number) => {
    await command({ type: 'ChargeMediaSeconds', attempt, ref, seconds, now: now() });
  };
  const fence = async (charge?: { readonly ref: string; readonly seconds: number }): Promise<StreamAppend> => {
    // A progress write still in flight would move the stream under the append: it conflicts, and is decided again.
    await progressWrites;
    const { state, revision } = await jobs.load(job.job_id);
    if (stopUnlessHeld(state)) throw stop.signal.reason;
    const write = { newId: deps.ids.uuidv7, metadata };
    const on = (c: JobCommand) => decideNext(streams.job(job.job_id), jobDecider, state, revision, c, write).appends;
    const [charged] = charge ? on({ type: 'ChargeMediaSeconds', attempt, ...charge, now: now() }) : [];
    if (charged) return charged;
    // Charged already (an earlier attempt), or nothing to charge: the progress as last reported.
    const shown = held ?? (lastProgress.percent >= 0 ? lastProgress : { label: 'working', percent: 0 });
    const [progressed] = on({ type: 'ReportProgress', attempt, label: shown.label, percent: shown.percent, now: now() });
    if (!progressed) throw new AppError('unavailable', 'this attempt no longer holds the job', { retriable: true });
    return progressed;
  };
  const reservationId = (kind: BalanceKind, what: string) => reservationIdOf(job.job_id, kind, what);
  const balance = {
    reserve: (kind: BalanceKind, what: string, amount: number, atLeast?: number) =>
      deps.balances.reserve({ driveId: job.drive_id, reservationId: reservationId(kind, what), jobId: job.job_id, kind, amount, atLeast }),
    settle: (kind: BalanceKind, what: string, used: number) => deps.balances.settle(job.drive_id, reservationId(kind, what), used),
    release: (kind: BalanceKind, what: string, reason: string) => deps.balances.release(job.drive_id, reservationId(kind, what), reason),
    spend: async (kind: BalanceKind, what: string, spent: { amount: number; used: number; reserve: boolean }, between: StreamAppend[]) => {
      const r = { driveId: job.drive_id, reservationId: reservationId(kind, what), jobId: job.job_id, kind, ...spent };
      const first = await fence({ ref: what, seconds: spent.used });
      const results = await deps.balances.reserveAndSettle(r, between, [], [first]);
      return results.every((result) => result.ok);
    },
  };

  try {
    const outcome = await work({ job, attempt, signal, progress, charge, fence, ...balance, log });
    clearTimeout(graceTimer);
    held = null;
    if (stop.signal.aborted) return await finishAborted();
    const stopped = await command({ type: 'StopJob', attempt, result: outcome.result, projectUrl: outcome.projectUrl, now: now() });
    if (stopped.events.length > 0) await releaseHeld(deps, job, 'the job stopped', log);
    log.info({ status: outcome.result.status, recorded: stopped.events.length > 0, seconds: elapsed() }, 'job stopped');
    deps.observer?.finished(job, outcome.result.status, elapsed());
  } catch (err) {
    if (stop.signal.aborted) return await finishAborted();
    if (deps.shutdown.aborted) {
      // Recorded so this attempt does not count against the retry limit, and its claim is free at once.
      await command({ type: 'InterruptJob', attempt, now: now() }).catch((e: unknown) =>
        log.warn({ err: e }, 'could not record the interruption'),
      );
      log.info({ attempt }, 'stopped mid-job by shutdown; it resumes after restart');
      deps.observer?.finished(job, 'interrupted', elapsed());
    } else if (err instanceof AppError && !err.retriable) {
      // Trying again would fail the same way: the job stops now, with the reason.
      const result = { status: 'error', error_code: err.code, error_message: err.message } as const;
      const stopped = await command({ type: 'StopJob', attempt, result, projectUrl: null, now: now() });
      if (stopped.events.length > 0) await releaseHeld(deps, job, 'the job failed', log);
      log.warn({ err, attempt }, 'job failed with an error not worth retrying; stopped with it');
      deps.observer?.finished(job, 'error', elapsed());
      return;
    } else {
      const reason = err instanceof Error ? err.message : String(err);
      const code = err instanceof AppError ? err.code : null;
      await command({ type: 'RecordAttemptFailure', attempt, reason, code, now: now() }).catch((e: unknown) =>
        log.warn({ err: e }, 'could not record why the attempt failed'),
      );
      log.warn({ err, attempt }, 'job attempt failed; it will be tried again');
      deps.observer?.finished(job, 'error', elapsed());
    }
    throw err; // the log delivers the job again, after its back-off, and the next attempt resumes
  } finally {
    clearInterval(watcher);
    clearTimeout(graceTimer);
  }

  async function finishAborted() {
    const reason: unknown = stop.signal.reason;
    const lost = reason instanceof ClaimLost;
    log.info({ attempt }, lost ? 'claim lost to another worker; this attempt stops' : 'job cancelled; work stopped');
    deps.observer?.finished(job, lost ? 'lost' : 'cancelled', elapsed());
    if (lost) return;
    await releaseHeld(deps, job, 'the job was cancelled', log);
    await afterCancel?.(job, log).catch((err: unknown) => log.warn({ err }, 'could not clean up after the cancelled job'));
  }
}

/**
 * Gives back whatever the ended job still holds of its drive's balances. A failure here only
 * delays it: the processors release it again when they see the job's end in the log.
 */
export async function releaseHeld(deps: Pick<RunnerDeps, 'balances'>, job: Job, reason: string, log: Logger): Promise<void> {
  await deps.balances
    .releaseJob(job.drive_id, job.job_id, reason)
    .catch((err: unknown) => log.warn({ err }, "could not release the job's reservations"));
}

/**
 * Claims the job. While another worker's lease runs, waits for it to lapse (or for the job to
 * finish) instead of starting a second attempt. Returns null when there is nothing to do.
 */
async function claim(
  deps: RunnerDeps,
  job: Job,
  command: (c: JobCommand) => Promise<HandleResult<JobEvent, JobState>>,
  leaseMs: number,
  log: Logger,
): Promise<Exclude<JobState, { status: 'none' }> | null> {
  for (;;) {
    deps.shutdown.throwIfAborted();
    try {
      const claimed = await command({ type: 'ClaimJob', workerId: deps.workerId, leaseMs, now: deps.clock.now().toISOString() });
      if (claimed.events.length === 0 || claimed.state.status === 'none') {
        log.debug('job already finished; nothing to do');
        return null;
      }
      return claimed.state;
    } catch (err) {
      if (!(err instanceof AppError && err.options.extra?.state === CLAIM_HELD)) throw err;
      log.debug({ reason: err.message }, 'job is claimed elsewhere; waiting for the claim to lapse');
      await sleep(Math.min(leaseMs, 2000), undefined, { signal: deps.shutdown });
    }
  }
}
