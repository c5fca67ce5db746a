import { isImportJobId } from '../../lib/domain/ids';
import type { Logger } from 'pino';
import { evolveJob, initialJobState, type JobEvent, type JobPool, type JobState, type JobType } from '../../lib/domain/job';
import type { EventLog, LogHandler, LogSubscription } from '../../lib/ports/event-log';
import type { StoredEvent } from '../../lib/ports/event-store';
import { processorHandlers, type ProcessorHandlers } from './handlers';
import { releaseHeld, runJob, type RunnerDeps } from './job-runner';
import type { Job, JobTypeDefinition } from './job-type';
import { JOB_TYPES, type AnyJobTypeDefinition, type JobTypeDeps } from './job-types';
import { createFairPool, type FairPool } from './pool';

/**
 * The processors service: the engine that runs every job type (job-types.ts). Per type, one
 * consumer group, so a long render never delays an import, and one bounded pool fair across
 * drives, sized by the type's pool setting. A log handler only hands the job to its pool and
 * returns: delivery goes on at once, and the log commits past the job when its attempt has ended.
 */

/** Consumer group of each job type. */
export const JOB_GROUPS = Object.fromEntries(Object.values(JOB_TYPES).map((t) => [t.type, t.group])) as Record<JobType, string>;
export const IMPORT_GROUP = JOB_GROUPS['import/project_media'];

export type ProcessorsDeps = Omit<RunnerDeps, 'shutdown' | 'jobs'> &
  Omit<JobTypeDeps, 'on'> & {
    log: EventLog;
    logger: Logger;
    /** Jobs each pool runs at once (IMPORT_CONCURRENCY, AGENT_CONCURRENCY, PUBLISH_CONCURRENCY). */
    concurrency: Readonly<Record<JobPool, number>>;
    /** Called when a consumer group can no longer consume: the process should exit. */
    onFatal?: (err: Error) => void;
  };

/**
 * Queued jobs a type's consumer group holds in flight (handed to its pool, not yet ended). The
 * pool is where fairness across drives happens, so it must see every drive's queued jobs: a job
 * left in the log behind a window filled by one drive's backlog waits for that whole backlog
 * (with 10,000, another drive's import waited behind 12,000 queued ones for as long as they took).
 * A job in flight costs about a kilobyte (its queued event and a pool entry), so this bounds the
 * engine's memory at about 100 MB per type; a deeper backlog than this delays other drives again.
 */
export const JOBS_IN_FLIGHT = 100_000;

/** The deps with the stream handlers the engine builds once: what the runner and the job types get. */
type EngineDeps = ProcessorsDeps & { on: ProcessorHandlers };

export type Processors = { stop(): Promise<void>; subscriptions: LogSubscription[]; pools: Readonly<Record<JobType, FairPool>> };

export async function start(given: ProcessorsDeps): Promise<Processors> {
  const deps: EngineDeps = { ...given, on: processorHandlers(given.store) };
  const shutdown = new AbortController();
  const runner: RunnerDeps = { ...deps, shutdown: shutdown.signal, jobs: deps.on.jobs };
  const types = Object.values(JOB_TYPES) as AnyJobTypeDefinition[];
  const pools = Object.fromEntries(types.map((t) => [t.type, createFairPool({ concurrency: deps.concurrency[t.pool] })])) as Record<
    JobType,
    FairPool
  >;
  const subscriptions: LogSubscription[] = [];
  const sweeps: Promise<void>[] = [];
  for (const type of types) {
    const engine = typeEngine(deps, runner, type, pools[type.type]);
    subscriptions.push(
      await deps.log.subscribe(type.group, engine.handle, { concurrency: 4, maxInFlight: JOBS_IN_FLIGHT, onFatal: deps.onFatal }),
    );
    if (type.sweep) sweeps.push(type.sweep(deps, engine.startIfReady, shutdown.signal));
  }
  const sizes = Object.fromEntries(types.map((t) => [t.type, deps.concurrency[t.pool]]));
  deps.logger.info({ groups: Object.values(JOB_GROUPS), concurrency: sizes, worker: deps.workerId }, 'processors started');
  return {
    subscriptions,
    pools,
    async stop() {
      shutdown.abort(new Error('shutting down'));
      await Promise.all(sweeps);
      // The subscriptions close at once: what the pools still hold ends with the shutdown and is
      // redelivered after the restart, which a closing subscription neither retries nor logs as a
      // failure (one warning per waiting job, thousands with a backlog, before). Running attempts
      // still record their interruption (which frees their claims) before we go.
      const closing = Promise.all(subscriptions.map((s) => s.close()));
      await Promise.all(Object.values(pools).map((p) => p.idle()));
      await closing;
    },
  };
}

/**
 * One job type's handling of the log: its own jobs only. The correlation between a definition and
 * its jobs' type is the engine's (one cast, here): a definition only ever sees jobs of its type.
 */
function typeEngine(deps: EngineDeps, runner: RunnerDeps, type: AnyJobTypeDefinition, pool: FairPool) {
  const def = type as unknown as JobTypeDefinition<JobType, JobTypeDeps>;
  const log = (job: Job) => deps.logger.child({ job_id: job.job_id, job_type: job.job_type });
  const afterCancel = def.afterCancel && ((job: Job, l: Logger) => def.afterCancel!(deps, job, l));
  const run = (job: Job) =>
    pool.submit(job.drive_id, job.job_id, () => runJob(runner, job, (ctx) => def.work(deps, ctx), afterCancel, def.progressGraceMs));
  const now = () => deps.clock.now().toISOString();

  /**
   * The job's state, when the job is this type's. An import's id says so (an agent or publish
   * group need not read the job's stream to pass over every import's stop and cancel).
   */
  const ours = async (jobId: string): Promise<Exclude<JobState, { status: 'none' }> | null> => {
    if (isImportJobId(jobId) && def.type !== 'import/project_media') return null;
    const { state } = await deps.on.jobs.load(jobId);
    return state.status !== 'none' && state.job.job_type === def.type ? state : null;
  };
  const startIfReady = async (jobId: string): Promise<void> => {
    const state = await ours(jobId);
    if (state?.status !== 'queued' || !(def.ready?.(state as Extract<JobState, { status: 'queued' }>, now()) ?? true)) return;
    await run(state.job);
  };
  /**
   * A job cancelled while no attempt runs (before any claimed it, or after the last one was
   * interrupted or its lease lapsed) is cleaned up here; a running attempt cleans up itself once
   * the cancellation has stopped its work, so the two never race over the same files.
   */
  const cleanUpCancelled = async (jobId: string): Promise<void> => {
    const state = await ours(jobId);
    if (state?.status !== 'cancelled') return;
    // Also when an attempt may still run: it releases again once stopped, whatever it reserved meanwhile.
    await releaseHeld(deps, state.job, 'the job was cancelled', log(state.job));
    const attemptMayRun = state.lease_until !== null && Date.parse(state.lease_until) > deps.clock.now().getTime();
    if (!attemptMayRun) await afterCancel?.(state.job, log(state.job));
  };
  /** The attempt that stopped the job released what it held; this is for a crash in between. */
  const releaseAfterStop = async (jobId: string): Promise<void> => {
    const state = await ours(jobId);
    if (state?.status === 'stopped') await releaseHeld(deps, state.job, 'the job stopped', log(state.job));
  };

  const jobIdOf = (event: StoredEvent) => (event.data as { job_id: string }).job_id;
  const handle: LogHandler = async (event) => {
    if (event.type === 'JobQueued') {
      const job = event.data as Job;
      if (job.job_type !== def.type) return;
      // Decided on the event itself, no read: a job not ready yet starts on a later event or the sweep.
      const queued = evolveJob(initialJobState(), { type: 'JobQueued', data: job } as JobEvent) as Extract<JobState, { status: 'queued' }>;
      if (def.ready && !def.ready(queued, now())) return;
      return { settled: run(job) };
    }
    if (event.type === 'JobCancelled') return { settled: cleanUpCancelled(jobIdOf(event)) };
    if (event.type === 'JobStopped') return { settled: releaseAfterStop(jobIdOf(event)) };
    if (def.wakesOn?.includes(event.type)) return { settled: startIfReady(jobIdOf(event)) };
  };
  return { handle, startIfReady };
}
