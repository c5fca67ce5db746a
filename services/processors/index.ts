import type { Logger } from 'pino';
import type { JobQueued, JobType } from '../../lib/domain/job';
import type { EventLog, LogSubscription } from '../../lib/ports/event-log';
import { importMedia, type ImportWorkDeps } from './import-work';
import { runJob, type JobContext, type RunnerDeps, type WorkOutcome } from './job-runner';
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
    logger: Logger;
    concurrency: number;
    /** Called when a consumer group can no longer consume: the process should exit. */
    onFatal?: (err: Error) => void;
  };

export type Processors = { stop(): Promise<void>; subscriptions: LogSubscription[]; pool: FairPool };

export async function start(deps: ProcessorsDeps): Promise<Processors> {
  const shutdown = new AbortController();
  const runner: RunnerDeps = { ...deps, shutdown: shutdown.signal };
  const pool = createFairPool({ concurrency: deps.concurrency });
  const work: Record<JobType, (ctx: JobContext) => Promise<WorkOutcome>> = {
    'import/project_media': (ctx) => importMedia(deps, ctx),
  };

  const subscriptions: LogSubscription[] = [];
  for (const [jobType, group] of Object.entries(JOB_GROUPS) as [JobType, string][]) {
    const subscription = await deps.log.subscribe(
      group,
      async (event) => {
        if (event.type !== 'JobQueued') return;
        const job = event.data as JobQueued['data'];
        if (job.job_type !== jobType) return;
        return { settled: pool.submit(job.drive_id, job.job_id, () => runJob(runner, job, work[jobType])) };
      },
      // Handlers return at once, so a few lanes suffice; the pool bounds the work.
      { concurrency: 4, maxInFlight: 10_000, onFatal: deps.onFatal },
    );
    subscriptions.push(subscription);
  }
  deps.logger.info({ groups: Object.values(JOB_GROUPS), concurrency: deps.concurrency, worker: deps.workerId }, 'processors started');
  return {
    subscriptions,
    pool,
    async stop() {
      shutdown.abort(new Error('shutting down'));
      // Running attempts record their interruption (which frees their claims) before we go.
      await pool.idle();
      await Promise.all(subscriptions.map((s) => s.close()));
    },
  };
}
