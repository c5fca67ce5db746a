import type { Decider } from './decider';
import { AppError, assertNever, conflict, ignoreUnknown, reject, type Rejection } from './errors';
import type { CostClass } from './agent/catalog';
import { uploadsOf, type ImportPlan, type ImportResult } from './import';
import type { Publisher, PublishMediaType } from './publication';
import type { RenderResolution } from './render-plan';
import type { AccessLevel } from './tenancy';

/**
 * The lifecycle of a background job (DESIGN §3 Jobs): queued → running → stopped | cancelled.
 * A worker runs a job under a claim: `JobStarted` names the worker and a lease it renews while it
 * works. Another worker may take the job over only once the lease has lapsed (or was released by
 * a graceful shutdown), and every later write of an attempt names that attempt, so a worker that
 * lost its claim can record nothing: no two attempts of one job ever count at once.
 */

// ---------------------------------------------------------------- job types

/**
 * Each job type's request and result, keyed by `job_type` (STYLE §13): agent and publish add
 * their members here, and the processors a folder (services/processors/README.md).
 */
type JobTypes = {
  readonly 'import/project_media': { readonly request: ImportPlan; readonly result: ImportResult };
  readonly agent: { readonly request: AgentRequest; readonly result: AgentResult };
  readonly publish: { readonly request: PublishRequest; readonly result: PublishResult };
};

/** An accepted publish (POST /jobs/publish; issue 21), every default and check applied when accepted. */
export type PublishRequest = {
  /** A UUID: the composition the request named (any of the three forms), or the first with content. */
  readonly composition_id: string;
  /** What renders: `Audio` also when the request left it out and the composition has no video. */
  readonly media_type: PublishMediaType;
  /** Video only: the requested resolution, or null (1080p, never upscaled past the largest source). */
  readonly resolution: RenderResolution | null;
  /** The drive's default when the request left it out; allowed by the drive's settings when accepted. */
  readonly access_level: AccessLevel;
  /** Who the metadata names as the publisher (the token's user and names). */
  readonly published_by: Publisher;
};

/** SPEC/DESIGN: Publish result. */
export type PublishResult = {
  readonly status: 'success';
  readonly composition_id: string;
  readonly share_url: string;
  readonly download_url: string;
  readonly download_url_expires_at: string;
  readonly media_type: PublishMediaType;
};

/** An accepted agent prompt (POST /jobs/agent), its model resolved and its composition id a UUID. */
export type AgentRequest = {
  readonly prompt: string;
  /** The canonical model that runs (what `auto` or an alias resolved to when accepted). */
  readonly model: string;
  /** What the 201 and the result report: the canonical id, or `auto` for an `auto` request. */
  readonly resolved_model: string;
  /** The cost class the turn is charged by (lib/domain/agent/catalog.ts). */
  readonly cost: CostClass;
  /** The composition the edits are directed to, or null: the tools choose. */
  readonly composition_id: string | null;
  readonly conversation_id: string;
  /** The project was created by this job (`project_name`): the work first gives it its empty placeholder composition. */
  readonly new_project: boolean;
};

/** SPEC: Agent result. */
export type AgentResult = {
  readonly status: 'success';
  readonly agent_response: string;
  readonly project_changed: boolean;
  readonly media_seconds_used: number;
  readonly ai_credits_used: number;
  readonly conversation_id: string;
  readonly resolved_model: string;
};
export type JobType = keyof JobTypes;

/** What a queued job carries of its type: a discriminated union on `job_type`. */
export type JobSpec = { readonly [T in JobType]: { readonly job_type: T; readonly request: JobTypes[T]['request'] } }[JobType];

/** The result of a job that could not run to its own result (a failure not worth retrying, or given up after repeated ones). */
export type FailedJobResult = { readonly status: 'error'; readonly error_code: string; readonly error_message: string };
/** What a job of type `T` stops with. */
export type JobResultOf<T extends JobType> = JobTypes[T]['result'] | FailedJobResult;
export type JobResult = JobResultOf<JobType>;

/** Which pool runs a job type's work (sized by IMPORT_CONCURRENCY, AGENT_CONCURRENCY, PUBLISH_CONCURRENCY). */
export type JobPool = 'import' | 'agent' | 'publish';

/** Omit over each member of a union (TypeScript's Omit would merge the members into one). */
export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

// ---------------------------------------------------------------- events

export type JobQueued = {
  readonly type: 'JobQueued';
  readonly data: {
    readonly job_id: string;
    readonly drive_id: string;
    readonly project_id: string;
    readonly project_url: string;
    readonly created_by: string;
    readonly callback_url: string | null;
    readonly created_at: string;
  } & JobSpec;
};
/** A worker claimed the job: attempt `attempt` runs until `lease_until` unless renewed. */
export type JobStarted = {
  readonly type: 'JobStarted';
  readonly data: {
    readonly job_id: string;
    readonly attempt: number;
    readonly started_at: string;
    /** Absent on events written before claims had leases: such a claim is free to take over. */
    readonly worker_id?: string | null;
    readonly lease_until?: string | null;
  };
};
export type JobLeaseRenewed = {
  readonly type: 'JobLeaseRenewed';
  readonly data: { readonly job_id: string; readonly attempt: number; readonly lease_until: string };
};
/** Imported media consumed from the drive's balance, recorded on the job (one per media reference). */
export type MediaSecondsCharged = {
  readonly type: 'MediaSecondsCharged';
  readonly data: {
    readonly drive_id: string;
    readonly job_id: string;
    readonly ref: string;
    readonly seconds: number;
    readonly charged_at: string;
  };
};
export type JobProgressed = {
  readonly type: 'JobProgressed';
  readonly data: { readonly job_id: string; readonly label: string; readonly percent: number; readonly at: string };
};
export type JobStopped = {
  readonly type: 'JobStopped';
  readonly data: {
    readonly job_id: string;
    readonly result: JobResult;
    /** Set when the result names a composition: the project URL then carries its short id. */
    readonly project_url: string | null;
    readonly stopped_at: string;
  };
};
export type JobCancelled = {
  readonly type: 'JobCancelled';
  readonly data: { readonly job_id: string; readonly stopped_at: string };
};

/** An upload item's bytes arrived whole through its signed URL and are stored under `blob_key`. */
export type UploadReceived = {
  readonly type: 'UploadReceived';
  readonly data: {
    readonly job_id: string;
    readonly ref: string;
    readonly asset_id: string;
    readonly blob_key: string;
    readonly size_bytes: number;
    readonly received_at: string;
  };
};

/**
 * Bytes of an upload item are arriving (recorded at most about once a second per upload): the
 * job is being worked on although no worker holds it yet, so it reads as running with progress.
 */
export type UploadProgressed = {
  readonly type: 'UploadProgressed';
  readonly data: { readonly job_id: string; readonly ref: string; readonly bytes: number; readonly total: number; readonly at: string };
};

/** A graceful shutdown stopped an attempt; the job resumes after restart and the attempt does not count as failed. */
export type JobInterrupted = {
  readonly type: 'JobInterrupted';
  readonly data: { readonly job_id: string; readonly attempt: number; readonly at: string };
};

/** An attempt failed with an error worth trying again; the next attempt resumes. The last reason is the job's if it is given up. */
export type JobAttemptFailed = {
  readonly type: 'JobAttemptFailed';
  readonly data: {
    readonly job_id: string;
    readonly attempt: number;
    readonly reason: string;
    /** The failure's error code when it had one (`unavailable`); null or absent for an unexpected error. */
    readonly code?: string | null;
    readonly at: string;
  };
};

export type JobEvent =
  | JobQueued
  | JobAttemptFailed
  | UploadReceived
  | UploadProgressed
  | JobStarted
  | JobLeaseRenewed
  | JobProgressed
  | MediaSecondsCharged
  | JobStopped
  | JobCancelled
  | JobInterrupted;

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
      /** The claim of the current attempt; `lease_until` null: released, free to take over. */
      readonly worker_id: string | null;
      readonly lease_until: string | null;
      /** Media references already charged, so a retried job is charged once per file. */
      readonly charged: ReadonlySet<string>;
      /** Upload items whose bytes have arrived, by media reference. */
      readonly uploads: ReadonlyMap<string, UploadReceived['data']>;
      /** Why the last failed attempt failed (what a job given up says). */
      readonly lastFailure: string | null;
      /** Its error code, when it had one: a job given up after a server it needs kept failing says `unavailable`. */
      readonly lastFailureCode: string | null;
    };

export const initialJobState = (): JobState => ({ status: 'none' });

export function evolveJob(state: JobState, event: JobEvent): JobState {
  switch (event.type) {
    case 'JobQueued':
      return {
        status: 'queued',
        job: event.data,
        attempt: 0,
        interruptions: 0,
        lastProgressPercent: null,
        worker_id: null,
        lease_until: null,
        charged: new Set(),
        uploads: new Map(),
        lastFailure: null,
        lastFailureCode: null,
      };
    case 'UploadReceived':
      return state.status === 'none' ? state : { ...state, uploads: new Map(state.uploads).set(event.data.ref, event.data) };
    case 'UploadProgressed':
      return state;
    case 'JobStarted':
      if (state.status === 'none') return state;
      return {
        ...state,
        status: state.status === 'queued' || state.status === 'running' ? 'running' : state.status,
        attempt: event.data.attempt,
        worker_id: event.data.worker_id ?? null,
        lease_until: event.data.lease_until ?? null,
      };
    case 'JobLeaseRenewed':
      if (state.status === 'none' || event.data.attempt !== state.attempt) return state;
      return { ...state, lease_until: event.data.lease_until };
    case 'MediaSecondsCharged':
      return state.status === 'none' ? state : { ...state, charged: new Set(state.charged).add(event.data.ref) };
    case 'JobProgressed':
      return state.status === 'none' ? state : { ...state, lastProgressPercent: event.data.percent };
    case 'JobStopped':
      return state.status === 'none' ? state : { ...state, status: 'stopped' };
    case 'JobCancelled':
      return state.status === 'none' ? state : { ...state, status: 'cancelled' };
    case 'JobInterrupted':
      return state.status === 'none' ? state : { ...state, interruptions: state.interruptions + 1, lease_until: null };
    case 'JobAttemptFailed':
      return state.status === 'none' ? state : { ...state, lastFailure: event.data.reason, lastFailureCode: event.data.code ?? null };
    default:
      return ignoreUnknown(event, state);
  }
}

/**
 * Upload items still awaited at `now`: not arrived and their URL not expired. A job with uploads
 * starts once none is awaited; the files that never came then fail.
 */
export function awaitedUploads(state: JobState, now: string): string[] {
  if (state.status === 'none' || state.job.job_type !== 'import/project_media') return [];
  const awaited: string[] = [];
  for (const [ref, upload] of uploadsOf(state.job.request)) {
    if (!state.uploads.has(ref) && Date.parse(upload.expires_at) > Date.parse(now)) awaited.push(ref);
  }
  return awaited;
}

/** Attempts that ended in a failure or a crash (what the retry limit counts). */
export const failedAttempts = (state: JobState): number =>
  state.status === 'none' ? 0 : Math.max(0, state.attempt - 1 - state.interruptions);

// ---------------------------------------------------------------- commands

export type QueueJob = { readonly type: 'QueueJob'; readonly job: DistributiveOmit<JobQueued['data'], 'created_at'>; readonly now: string };
/** Claims the job for `workerId` until `now + leaseMs`. Refused while another worker's lease runs. */
export type ClaimJob = { readonly type: 'ClaimJob'; readonly workerId: string; readonly leaseMs: number; readonly now: string };
export type RenewLease = { readonly type: 'RenewLease'; readonly attempt: number; readonly leaseMs: number; readonly now: string };
export type ReportProgress = {
  readonly type: 'ReportProgress';
  readonly attempt: number;
  readonly label: string;
  readonly percent: number;
  readonly now: string;
};
export type ChargeMediaSeconds = {
  readonly type: 'ChargeMediaSeconds';
  readonly attempt: number;
  readonly ref: string;
  readonly seconds: number;
  readonly now: string;
};
export type StopJob = {
  readonly type: 'StopJob';
  readonly attempt: number;
  readonly result: JobResult;
  readonly projectUrl: string | null;
  readonly now: string;
};
/** Records that an upload item's bytes arrived (from the signed upload URL's PUT). */
export type RecordUpload = {
  readonly type: 'RecordUpload';
  readonly upload: Omit<UploadReceived['data'], 'received_at'>;
  readonly now: string;
};
export type RecordUploadProgress = {
  readonly type: 'RecordUploadProgress';
  readonly progress: Omit<UploadProgressed['data'], 'at'>;
  readonly now: string;
};
export type CancelJob = { readonly type: 'CancelJob'; readonly now: string };
export type InterruptJob = { readonly type: 'InterruptJob'; readonly attempt: number; readonly now: string };
export type RecordAttemptFailure = {
  readonly type: 'RecordAttemptFailure';
  readonly attempt: number;
  readonly reason: string;
  readonly code?: string | null;
  readonly now: string;
};

export type JobCommand =
  | QueueJob
  | RecordUpload
  | RecordUploadProgress
  | ClaimJob
  | RenewLease
  | ReportProgress
  | ChargeMediaSeconds
  | StopJob
  | CancelJob
  | InterruptJob
  | RecordAttemptFailure;

// ---------------------------------------------------------------- decide

const finished = (s: JobState) => s.status === 'stopped' || s.status === 'cancelled';

/** The attempt that holds the job now: only its writes count. */
const holds = (state: JobState, attempt: number) => state.status === 'running' && state.attempt === attempt;

const leaseEnd = (now: string, ms: number) => new Date(Date.parse(now) + ms).toISOString();

/** A claim that can be taken over: released, lapsed, or the same worker restarted. */
const claimable = (state: Exclude<JobState, { status: 'none' }>, workerId: string, now: string) =>
  state.lease_until === null || Date.parse(state.lease_until) <= Date.parse(now) || state.worker_id === workerId;

/** Refusal of a claim while another worker's lease runs: a typed outcome the runner waits on. */
export const CLAIM_HELD = 'claimed';

/**
 * Decides what a command means for a job. An empty list is a no-op (for example progress on a
 * job that was cancelled meanwhile, or a result from an attempt that lost its claim), never an
 * error: processors race with DELETE and with each other by design.
 */
export function decideJob(command: JobCommand, state: JobState): JobEvent[] | Rejection {
  switch (command.type) {
    case 'QueueJob':
      if (state.status !== 'none') return reject(new AppError('conflict', 'job already exists', { extra: { state: state.status } }));
      return [{ type: 'JobQueued', data: { ...command.job, created_at: command.now } }];
    case 'RecordUpload': {
      if (state.status === 'none') return reject(new AppError('not_found', 'job does not exist'));
      const { ref, asset_id } = command.upload;
      const expected = state.job.job_type === 'import/project_media' ? uploadsOf(state.job.request).get(ref) : undefined;
      if (expected?.asset_id !== asset_id) return reject(new AppError('not_found', `job has no upload ${asset_id} for "${ref}"`));
      if (state.uploads.has(ref)) return [];
      // Once the job has started (every upload arrived or expired) it reads no more uploads.
      if (state.status !== 'queued') return reject(conflict(`the job is ${state.status} and takes no more uploads`, state.status));
      return [{ type: 'UploadReceived', data: { ...command.upload, received_at: command.now } }];
    }
    case 'RecordUploadProgress': {
      const { ref } = command.progress;
      // Only while the job waits for this upload: afterwards (or for another job's ref) it says nothing new.
      if (state.status !== 'queued' || state.job.job_type !== 'import/project_media') return [];
      if (state.uploads.has(ref) || !uploadsOf(state.job.request).has(ref)) return [];
      return [{ type: 'UploadProgressed', data: { ...command.progress, at: command.now } }];
    }
    case 'ClaimJob': {
      if (state.status === 'none') return reject(new AppError('not_found', 'job does not exist'));
      if (finished(state)) return [];
      if (state.status === 'running' && !claimable(state, command.workerId, command.now)) {
        return reject(conflict(`job is claimed by ${state.worker_id} until ${state.lease_until}`, CLAIM_HELD));
      }
      const data = {
        job_id: state.job.job_id,
        attempt: state.attempt + 1,
        started_at: command.now,
        worker_id: command.workerId,
        lease_until: leaseEnd(command.now, command.leaseMs),
      };
      return [{ type: 'JobStarted', data }];
    }
    case 'RenewLease':
      if (!holds(state, command.attempt) || state.status !== 'running') return [];
      return [
        {
          type: 'JobLeaseRenewed',
          data: { job_id: state.job.job_id, attempt: command.attempt, lease_until: leaseEnd(command.now, command.leaseMs) },
        },
      ];
    case 'ReportProgress': {
      if (!holds(state, command.attempt) || state.status !== 'running') return [];
      const percent = Math.max(0, Math.min(100, Math.round(command.percent)));
      return [{ type: 'JobProgressed', data: { job_id: state.job.job_id, label: command.label, percent, at: command.now } }];
    }
    case 'ChargeMediaSeconds':
      if (!holds(state, command.attempt) || state.status !== 'running') return [];
      if (state.charged.has(command.ref) || command.seconds <= 0) return [];
      return [
        {
          type: 'MediaSecondsCharged',
          data: {
            drive_id: state.job.drive_id,
            job_id: state.job.job_id,
            ref: command.ref,
            seconds: command.seconds,
            charged_at: command.now,
          },
        },
      ];
    case 'StopJob':
      if (state.status === 'none') return reject(new AppError('not_found', 'job does not exist'));
      if (finished(state) || !holds(state, command.attempt)) return []; // stopped once, by the attempt that holds it
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
      if (!holds(state, command.attempt) || state.status !== 'running') return [];
      return [{ type: 'JobInterrupted', data: { job_id: state.job.job_id, attempt: state.attempt, at: command.now } }];
    case 'RecordAttemptFailure':
      if (!holds(state, command.attempt) || state.status !== 'running') return [];
      return [
        {
          type: 'JobAttemptFailed',
          data: { job_id: state.job.job_id, attempt: command.attempt, reason: command.reason, code: command.code ?? null, at: command.now },
        },
      ];
    default:
      return assertNever(command);
  }
}

export const jobDecider: Decider<JobCommand, JobEvent, JobState> = {
  initialState: initialJobState,
  evolve: evolveJob,
  decide: decideJob,
};
