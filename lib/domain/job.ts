import { AppError, assertNever, conflict, reject, type Rejection } from './errors';

/** The lifecycle of a background job (DESIGN §3 Jobs): queued → running → stopped | cancelled. */

// ---------------------------------------------------------------- events

export type JobType = 'import/project_media' | 'agent' | 'publish';

export type JobQueued = {
  readonly type: 'JobQueued';
  readonly data: {
    readonly job_id: string;
    readonly job_type: JobType;
    readonly drive_id: string;
    readonly project_id: string;
    readonly project_url: string;
    readonly created_by: string;
    readonly callback_url: string | null;
    /** The accepted request, normalized: what the processor needs to do the work. */
    readonly request: Record<string, unknown>;
    readonly created_at: string;
  };
};
export type JobStarted = {
  readonly type: 'JobStarted';
  readonly data: { readonly job_id: string; readonly attempt: number; readonly started_at: string };
};
export type JobProgressed = {
  readonly type: 'JobProgressed';
  readonly data: { readonly job_id: string; readonly label: string; readonly percent: number; readonly at: string };
};
export type JobStopped = {
  readonly type: 'JobStopped';
  readonly data: {
    readonly job_id: string;
    readonly result: Record<string, unknown>;
    /** Set when the result names a composition: the project URL then carries its short id. */
    readonly project_url: string | null;
    readonly stopped_at: string;
  };
};
export type JobCancelled = {
  readonly type: 'JobCancelled';
  readonly data: { readonly job_id: string; readonly stopped_at: string };
};

/** A graceful shutdown stopped an attempt; the job resumes after restart and the attempt does not count as failed. */
export type JobInterrupted = {
  readonly type: 'JobInterrupted';
  readonly data: { readonly job_id: string; readonly attempt: number; readonly at: string };
};

export type JobEvent = JobQueued | JobStarted | JobProgressed | JobStopped | JobCancelled | JobInterrupted;

// ---------------------------------------------------------------- state

export type JobState =
  | { readonly status: 'none' }
  | {
      readonly status: 'queued' | 'running' | 'stopped' | 'cancelled';
      readonly job: JobQueued['data'];
      readonly attempt: number;
      /** Attempts ended by a graceful shutdown, not by a failure. */
      readonly interruptions: number;
      readonly lastProgressPercent: number | null;
    };

export const initialJobState = (): JobState => ({ status: 'none' });

export function evolveJob(state: JobState, event: JobEvent): JobState {
  switch (event.type) {
    case 'JobQueued':
      return { status: 'queued', job: event.data, attempt: 0, interruptions: 0, lastProgressPercent: null };
    case 'JobStarted':
      return state.status === 'none' ? state : { ...state, status: 'running', attempt: event.data.attempt };
    case 'JobProgressed':
      return state.status === 'none' ? state : { ...state, lastProgressPercent: event.data.percent };
    case 'JobStopped':
      return state.status === 'none' ? state : { ...state, status: 'stopped' };
    case 'JobCancelled':
      return state.status === 'none' ? state : { ...state, status: 'cancelled' };
    case 'JobInterrupted':
      return state.status === 'none' ? state : { ...state, interruptions: state.interruptions + 1 };
    default:
      return assertNever(event);
  }
}

/** Attempts that ended in a failure or a crash (what the retry limit counts). */
export const failedAttempts = (state: JobState): number =>
  state.status === 'none' ? 0 : Math.max(0, state.attempt - 1 - state.interruptions);

// ---------------------------------------------------------------- commands

export type QueueJob = { readonly type: 'QueueJob'; readonly job: Omit<JobQueued['data'], 'created_at'>; readonly now: string };
export type StartJob = { readonly type: 'StartJob'; readonly now: string };
export type ReportProgress = { readonly type: 'ReportProgress'; readonly label: string; readonly percent: number; readonly now: string };
export type StopJob = {
  readonly type: 'StopJob';
  readonly result: Record<string, unknown>;
  readonly projectUrl: string | null;
  readonly now: string;
};
export type CancelJob = { readonly type: 'CancelJob'; readonly now: string };
export type InterruptJob = { readonly type: 'InterruptJob'; readonly now: string };

export type JobCommand = QueueJob | StartJob | ReportProgress | StopJob | CancelJob | InterruptJob;

// ---------------------------------------------------------------- decide

const finished = (s: JobState) => s.status === 'stopped' || s.status === 'cancelled';

/**
 * Decides what a command means for a job. An empty list is a no-op (for example progress on a
 * job that was cancelled meanwhile), never an error: processors race with DELETE by design.
 */
export function decideJob(command: JobCommand, state: JobState): JobEvent[] | Rejection {
  switch (command.type) {
    case 'QueueJob':
      if (state.status !== 'none') return reject(new AppError('conflict', 'job already exists', { extra: { state: state.status } }));
      return [{ type: 'JobQueued', data: { ...command.job, created_at: command.now } }];
    case 'StartJob':
      if (state.status === 'none') return reject(new AppError('not_found', 'job does not exist'));
      if (finished(state)) return [];
      // Starting a job that is already running is a restart after a crash: a new attempt.
      return [{ type: 'JobStarted', data: { job_id: state.job.job_id, attempt: state.attempt + 1, started_at: command.now } }];
    case 'ReportProgress': {
      if (state.status !== 'running') return [];
      const percent = Math.max(0, Math.min(100, Math.round(command.percent)));
      return [{ type: 'JobProgressed', data: { job_id: state.job.job_id, label: command.label, percent, at: command.now } }];
    }
    case 'StopJob':
      if (state.status === 'none') return reject(new AppError('not_found', 'job does not exist'));
      if (finished(state)) return []; // stopped exactly once; a late or duplicate result is dropped
      return [
        {
          type: 'JobStopped',
          data: { job_id: state.job.job_id, result: command.result, project_url: command.projectUrl, stopped_at: command.now },
        },
      ];
    case 'CancelJob':
      if (state.status === 'none') return reject(new AppError('not_found', 'job does not exist'));
      if (finished(state)) return reject(conflict(`job is already ${state.status}`, state.status));
      return [{ type: 'JobCancelled', data: { job_id: state.job.job_id, stopped_at: command.now } }];
    case 'InterruptJob':
      if (state.status !== 'running') return [];
      return [{ type: 'JobInterrupted', data: { job_id: state.job.job_id, attempt: state.attempt, at: command.now } }];
    default:
      return assertNever(command);
  }
}
