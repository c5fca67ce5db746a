import type { Logger } from 'pino';
import { handleCommand, loadState } from '../../lib/app/command-handler';
import { jobDecider } from '../../lib/app/deciders';
import { failedAttempts, type JobQueued } from '../../lib/domain/job';
import { streams } from '../../lib/domain/ids';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { DeliveryContext } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';

/**
 * Runs one job from the log: start it, do the work while watching for cancellation, stop it
 * exactly once. The job stream's expected revision makes every step safe against a second
 * worker or a redelivery: a stopped or cancelled job is never started or stopped again.
 */

export type Job = JobQueued['data'];

export type WorkOutcome = { result: Record<string, unknown>; projectUrl: string | null };

export interface JobContext {
  readonly job: Job;
  readonly attempt: number;
  /** Aborted when the job is cancelled or the process shuts down. */
  readonly signal: AbortSignal;
  /** Records progress (throttled: at most one event a second unless the label changes). */
  progress(label: string, percent: number): Promise<void>;
  readonly log: Logger;
}

export type RunnerDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  /** Aborted on shutdown: running work stops and its event is redelivered after a restart. */
  shutdown: AbortSignal;
  cancelPollMs?: number;
  maxAttempts?: number;
};

export async function runJob(deps: RunnerDeps, job: Job, delivery: DeliveryContext, work: (ctx: JobContext) => Promise<WorkOutcome>) {
  const stream = streams.job(job.job_id);
  const log = deps.logger.child({ job_id: job.job_id, job_type: job.job_type });
  const metadata = { partition_key: job.project_id, drive_id: job.drive_id, causation_id: job.job_id };
  const command = (c: Parameters<typeof jobDecider.decide>[0]) =>
    handleCommand(deps.store, stream, jobDecider, c, { newId: deps.ids.uuid, metadata });
  const now = () => deps.clock.now().toISOString();

  const started = await command({ type: 'StartJob', now: now() });
  if (started.events.length === 0) return log.debug('job already finished; nothing to do');
  const attempt = started.state.status === 'none' ? 1 : started.state.attempt;
  if (failedAttempts(started.state) >= (deps.maxAttempts ?? 3)) {
    log.error({ attempt }, 'job failed on every attempt; stopping it with an error');
    const result = { status: 'error', error_code: 'internal_error', error_message: 'the job failed repeatedly and was given up' };
    await command({ type: 'StopJob', result, projectUrl: null, now: now() });
    return;
  }
  log.info({ attempt }, 'job started');

  const cancelled = new AbortController();
  const signal = AbortSignal.any([cancelled.signal, deps.shutdown]);
  const watcher = setInterval(async () => {
    await delivery.heartbeat().catch(() => undefined);
    const { state } = await loadState(deps.store, stream, jobDecider).catch(() => ({ state: null }));
    if (state?.status === 'cancelled') cancelled.abort(new Error('job cancelled'));
  }, deps.cancelPollMs ?? 500);

  let lastProgress = { at: 0, label: '', percent: -1 };
  const progress = async (label: string, percent: number) => {
    const t = deps.clock.now().getTime();
    const rounded = Math.round(percent);
    if (label === lastProgress.label && (t - lastProgress.at < 1000 || rounded === lastProgress.percent)) return;
    lastProgress = { at: t, label, percent: rounded };
    await command({ type: 'ReportProgress', label, percent: rounded, now: now() });
  };

  try {
    const outcome = await work({ job, attempt, signal, progress, log });
    if (cancelled.signal.aborted) return log.info('job was cancelled; its result is dropped');
    const stopped = await command({ type: 'StopJob', result: outcome.result, projectUrl: outcome.projectUrl, now: now() });
    log.info({ status: outcome.result.status, recorded: stopped.events.length > 0 }, 'job stopped');
  } catch (err) {
    if (cancelled.signal.aborted) return log.info('job cancelled; work stopped');
    if (deps.shutdown.aborted) {
      // Recorded so this attempt does not count against the retry limit (deploys restart processors).
      await command({ type: 'InterruptJob', now: now() }).catch((e: unknown) => log.warn({ err: e }, 'could not record the interruption'));
      log.info({ attempt }, 'stopped mid-job by shutdown; it resumes after restart');
    } else {
      log.warn({ err, attempt }, 'job attempt failed; the log will deliver it again');
    }
    throw err; // left uncommitted: the log redelivers and the next attempt resumes
  } finally {
    clearInterval(watcher);
  }
}
