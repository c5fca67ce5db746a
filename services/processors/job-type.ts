import type { Logger } from 'pino';
import type { JobPool, JobQueued, JobState, JobType } from '../../lib/domain/job';
import type { JobContext, WorkOutcome } from './job-runner';

/**
 * A job type as the engine runs it (STYLE §17): a folder under services/processors/ exports one
 * of these, and job-types.ts lists it. The engine owns the rest: one consumer group per type, a
 * pool per type fair across drives, claims and leases, retries by `retriable`, the job document,
 * reservations released when the job ends. The recipe is services/processors/README.md.
 */
export interface JobTypeDefinition<T extends JobType = JobType, D = unknown> {
  readonly type: T;
  /** The consumer group its processors join (its checkpoint is named by it: never rename it). */
  readonly group: string;
  /** The pool its work runs in, sized by `<POOL>_CONCURRENCY`. */
  readonly pool: JobPool;
  /** Does the work; its ports come in `deps`, everything about the job in `ctx`. */
  work(deps: D, ctx: JobContext<T>): Promise<WorkOutcome<T>>;
  /**
   * A queued job that may not start yet (an import waiting for its uploads): whether it can at
   * `now`. Without it a job starts as soon as it is queued.
   */
  ready?(state: Extract<JobState, { status: 'queued' }>, now: string): boolean;
  /** Events of the job's stream that may make a waiting job ready (the engine looks again). */
  readonly wakesOn?: readonly string[];
  /** Looks for waiting jobs that became ready by time alone, calling `start` with their ids, until `signal`. */
  sweep?(deps: D, start: (jobId: string) => Promise<void>, signal: AbortSignal): Promise<void>;
  /**
   * Progress reported in an attempt's first milliseconds is held, and only the newest written
   * when they pass (none when the job is done by then): for types whose jobs often end within a
   * fraction of a second (agent turns, cached republishes), where each progress event would be an
   * fsynced append nobody could see. Default 0: every phase recorded (imports).
   */
  readonly progressGraceMs?: number;
  /** What goes when a job of the type is cancelled: what its work left that only it needed. */
  afterCancel?(deps: D, job: Job<T>, log: Logger): Promise<void>;
}

/** A queued job of type `T`. */
export type Job<T extends JobType = JobType> = Extract<JobQueued['data'], { readonly job_type: T }>;
