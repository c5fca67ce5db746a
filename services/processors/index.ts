import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { loadState } from '../../lib/app/command-handler';
import { jobDecider } from '../../lib/app/deciders';
import { uploadsOf } from '../../lib/domain/import';
import { awaitedUploads, type JobQueued, type JobType } from '../../lib/domain/job';
import { streams } from '../../lib/domain/ids';
import type { EventLog, LogSubscription } from '../../lib/ports/event-log';
import type { ReadStore } from '../../lib/ports/read-store';
import { JOBS } from '../../lib/read-models/jobs';
import { discardUploads, importMedia, type ImportWorkDeps } from './import-work';
import { releaseHeld, runJob, type JobContext, type RunnerDeps, type WorkOutcome } from './job-runner';
import { createFairPool, type FairPool } from './pool';

/**
 * The processors service: one consumer group per job type, so a long render never delays an
 * import. A log handler only hands the job to a bounded pool, fair across drives, and returns:
 * delivery goes on at once, and the log commits past the job when its attempt has ended.
 */

/** Consumer group of each job type (the import one keeps its original name: its checkpoint stays). */
export const JOB_GROUPS: Record<JobType, string> = { 'import/project_media': 'import-processor' };
export const IMPORT_GROUP = JOB_GROUPS['import/project_media'];

export type ProcessorsDeps = Omit<RunnerDeps, 'shutdown'> &
  ImportWorkDeps & {
    log: EventLog;
    /** The `jobs` read model: queued jobs whose upload URLs have expired are found there. */
    read: ReadStore;
    logger: Logger;
    concurrency: number;
    /** How often to look for jobs whose uploads can no longer arrive; default 15 s. */
    uploadScanMs?: number;
    /** Called when a consumer group can no longer consume: the process should exit. */
    onFatal?: (err: Error) => void;
  };

type Job = JobQueued['data'];

export type Processors = { stop(): Promise<void>; subscriptions: LogSubscription[]; pool: FairPool };

export async function start(deps: ProcessorsDeps): Promise<Processors> {
  const shutdown = new AbortController();
  const runner: RunnerDeps = { ...deps, shutdown: shutdown.signal };
  const pool = createFairPool({ concurrency: deps.concurrency });
  const work: Record<JobType, (ctx: JobContext) => Promise<WorkOutcome>> = {
    'import/project_media': (ctx) => importMedia(deps, ctx),
  };
  /** What goes when a job of the type is cancelled: what its work left that only it needed. */
  const afterCancel: Partial<Record<JobType, (job: Job, log: Logger) => Promise<void>>> = {
    'import/project_media': (job, log) => discardUploads(deps, job, log),
  };

  const run = (job: Job) => pool.submit(job.drive_id, job.job_id, () => runJob(runner, job, work[job.job_type], afterCancel[job.job_type]));
  /**
   * A job cancelled while no attempt runs (before any claimed it, or after the last one was
   * interrupted or its lease lapsed) is cleaned up here; a running attempt cleans up itself once
   * the cancellation has stopped its work, so the two never race over the same files.
   */
  const cleanUpCancelled = async (jobId: string, jobType: JobType): Promise<void> => {
    const { state } = await loadState(deps.store, streams.job(jobId), jobDecider);
    if (state.status !== 'cancelled' || state.job.job_type !== jobType) return;
    const log = deps.logger.child({ job_id: jobId, job_type: state.job.job_type });
    // Also when an attempt may still run: it releases again once stopped, whatever it reserved meanwhile.
    await releaseHeld(deps, state.job, 'the job was cancelled', log);
    const attemptMayRun = state.lease_until !== null && Date.parse(state.lease_until) > deps.clock.now().getTime();
    if (attemptMayRun) return;
    await afterCancel[state.job.job_type]?.(state.job, log);
  };
  /** The attempt that stopped the job released what it held; this is for a crash in between. */
  const releaseAfterStop = async (jobId: string, jobType: JobType): Promise<void> => {
    const { state } = await loadState(deps.store, streams.job(jobId), jobDecider);
    if (state.status !== 'stopped' || state.job.job_type !== jobType) return;
    await releaseHeld(deps, state.job, 'the job stopped', deps.logger.child({ job_id: jobId, job_type: jobType }));
  };
  /**
   * A job with upload items starts once none is awaited: when its last upload arrives (the
   * `UploadReceived` that completes it), or when the upload URLs expire (the scan below).
   */
  const startIfReady = async (jobId: string): Promise<void> => {
    const { state } = await loadState(deps.store, streams.job(jobId), jobDecider);
    if (state.status !== 'queued' || awaitedUploads(state, deps.clock.now().toISOString()).length > 0) return;
    await run(state.job);
  };

  const subscriptions: LogSubscription[] = [];
  for (const [jobType, group] of Object.entries(JOB_GROUPS) as [JobType, string][]) {
    const subscription = await deps.log.subscribe(
      group,
      async (event) => {
        if (event.type === 'UploadReceived') return { settled: startIfReady((event.data as { job_id: string }).job_id) };
        if (event.type === 'JobCancelled') return { settled: cleanUpCancelled((event.data as { job_id: string }).job_id, jobType) };
        if (event.type === 'JobStopped') return { settled: releaseAfterStop((event.data as { job_id: string }).job_id, jobType) };
        if (event.type !== 'JobQueued') return;
        const job = event.data as Job;
        if (job.job_type !== jobType) return;
        if (job.job_type === 'import/project_media' && uploadsOf(job.request).size > 0) return { settled: startIfReady(job.job_id) };
        return { settled: run(job) };
      },
      // Handlers return at once, so a few lanes suffice; the pool bounds the work.
      { concurrency: 4, maxInFlight: 10_000, onFatal: deps.onFatal },
    );
    subscriptions.push(subscription);
  }
  const scanner = scanExpiredUploads(deps, startIfReady, shutdown.signal);
  deps.logger.info({ groups: Object.values(JOB_GROUPS), concurrency: deps.concurrency, worker: deps.workerId }, 'processors started');
  return {
    subscriptions,
    pool,
    async stop() {
      shutdown.abort(new Error('shutting down'));
      await scanner;
      // Running attempts record their interruption (which frees their claims) before we go.
      await pool.idle();
      await Promise.all(subscriptions.map((s) => s.close()));
    },
  };
}

/**
 * Finds queued jobs whose upload URLs have all expired (the `jobs` read model's `_uploads_until`)
 * and starts them: their missing uploads then fail. Every replica may scan; the job's claim
 * decides which one runs it.
 */
async function scanExpiredUploads(deps: ProcessorsDeps, startIfReady: (jobId: string) => Promise<void>, signal: AbortSignal) {
  const every = deps.uploadScanMs ?? 15_000;
  while (!signal.aborted) {
    // The abortable sleep removes its listener when it ends: one per loop would pile up.
    await sleep(every, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return;
    try {
      const due = await deps.read.find(JOBS, { _uploads_until: { $lte: deps.clock.now().toISOString() } }, { limit: 100 });
      for (const doc of due)
        void startIfReady(doc._id).catch((err: unknown) => deps.logger.warn({ err, job_id: doc._id }, 'could not start a job'));
    } catch (err) {
      deps.logger.warn({ err }, 'could not look for jobs whose uploads expired');
    }
  }
}
