import type { Decider } from './decider';
import { AppError, assertNever, conflict, ignoreUnknown, reject, type Rejection } from './errors';

/**
 * The webhook delivery of one job (DESIGN §3 Webhooks), on its own stream `delivery-<job_id>`.
 * Every attempt is an event, so a restarted dispatcher resumes the schedule where it was and never
 * sends an acknowledged delivery again. Attempts are claimed with a lease and recorded fenced by
 * attempt number, as job claims are: several dispatchers never send one attempt twice.
 */

// ---------------------------------------------------------------- events

export type DeliveryScheduled = {
  readonly type: 'DeliveryScheduled';
  readonly data: {
    /** The `webhook-id`: the same for every attempt and redelivery of this job's callback. */
    readonly delivery_id: string;
    readonly job_id: string;
    readonly drive_id: string;
    readonly project_id: string;
    readonly url: string;
    readonly due_at: string;
    readonly scheduled_at: string;
  };
};
export type DeliveryClaimed = {
  readonly type: 'DeliveryClaimed';
  readonly data: { readonly attempt: number; readonly worker_id: string; readonly lease_until: string; readonly at: string };
};
export type DeliveryOutcome = 'delivered' | 'retry' | 'gone' | 'failed';
export type DeliveryAttempted = {
  readonly type: 'DeliveryAttempted';
  readonly data: {
    readonly attempt: number;
    readonly at: string;
    /** The receiver's status code; null when there was no answer (`error` says why). */
    readonly status: number | null;
    readonly error: string | null;
    readonly duration_ms: number;
    /** delivered: a 2xx; gone: a 410 (no more retries); retry: due again at `next_attempt_at`; failed: the schedule is spent. */
    readonly outcome: DeliveryOutcome;
    readonly next_attempt_at: string | null;
  };
};
/** Someone asked to deliver again now (POST /jobs/{id}/deliveries); the schedule starts over. */
export type DeliveryRequested = { readonly type: 'DeliveryRequested'; readonly data: { readonly at: string; readonly by: string } };

export type DeliveryEvent = DeliveryScheduled | DeliveryClaimed | DeliveryAttempted | DeliveryRequested;

// ---------------------------------------------------------------- state

export type DeliveryState =
  | { readonly exists: false }
  | {
      readonly exists: true;
      readonly delivery: DeliveryScheduled['data'];
      readonly state: 'pending' | 'delivered' | 'gone' | 'failed';
      readonly due_at: string | null;
      /** Attempts made (claimed) so far; the next claim is attempt `attempts + 1`. */
      readonly attempts: number;
      /** Failed attempts since the schedule last started: the index of the next delay. */
      readonly failures: number;
      readonly claim: { readonly attempt: number; readonly worker_id: string; readonly lease_until: string } | null;
    };

export const initialDeliveryState = (): DeliveryState => ({ exists: false });

export function evolveDelivery(state: DeliveryState, event: DeliveryEvent): DeliveryState {
  switch (event.type) {
    case 'DeliveryScheduled':
      return { exists: true, delivery: event.data, state: 'pending', due_at: event.data.due_at, attempts: 0, failures: 0, claim: null };
    case 'DeliveryClaimed': {
      if (!state.exists) return state;
      const { attempt, worker_id, lease_until } = event.data;
      return { ...state, attempts: attempt, claim: { attempt, worker_id, lease_until } };
    }
    case 'DeliveryAttempted': {
      if (!state.exists) return state;
      const { outcome, next_attempt_at } = event.data;
      const next = outcome === 'retry' ? 'pending' : outcome;
      return {
        ...state,
        state: next,
        due_at: next_attempt_at,
        failures: outcome === 'retry' ? state.failures + 1 : state.failures,
        claim: null,
      };
    }
    case 'DeliveryRequested':
      return state.exists ? { ...state, state: 'pending', due_at: event.data.at, failures: 0, claim: null } : state;
    default:
      return ignoreUnknown(event, state);
  }
}

// ---------------------------------------------------------------- commands

export type ScheduleDelivery = {
  readonly type: 'ScheduleDelivery';
  readonly delivery: Omit<DeliveryScheduled['data'], 'scheduled_at' | 'due_at'>;
  readonly now: string;
};
export type ClaimDelivery = { readonly type: 'ClaimDelivery'; readonly workerId: string; readonly leaseMs: number; readonly now: string };
export type RecordAttempt = {
  readonly type: 'RecordAttempt';
  readonly attempt: number;
  readonly result: { readonly status: number } | { readonly error: string };
  readonly durationMs: number;
  /** Delays between failed attempts, in seconds (WEBHOOK_RETRY_SCHEDULE). */
  readonly scheduleSeconds: readonly number[];
  readonly now: string;
};
export type RequestRedelivery = { readonly type: 'RequestRedelivery'; readonly by: string; readonly now: string };

export type DeliveryCommand = ScheduleDelivery | ClaimDelivery | RecordAttempt | RequestRedelivery;

/** A claim refused because it is not this worker's turn (not due, or another worker holds it). */
export const NOT_CLAIMABLE = 'not_claimable';

const plus = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

export function decideDelivery(command: DeliveryCommand, state: DeliveryState): DeliveryEvent[] | Rejection {
  switch (command.type) {
    case 'ScheduleDelivery':
      if (state.exists) return []; // one delivery per job: a redelivered JobStopped schedules nothing more
      return [{ type: 'DeliveryScheduled', data: { ...command.delivery, due_at: command.now, scheduled_at: command.now } }];
    case 'ClaimDelivery': {
      if (!state.exists) return reject(new AppError('not_found', 'delivery does not exist'));
      const now = Date.parse(command.now);
      const due = state.state === 'pending' && state.due_at !== null && Date.parse(state.due_at) <= now;
      const held = state.claim !== null && Date.parse(state.claim.lease_until) > now;
      if (!due || held) return reject(conflict('the delivery is not due or is claimed by another dispatcher', NOT_CLAIMABLE));
      const data = {
        attempt: state.attempts + 1,
        worker_id: command.workerId,
        lease_until: plus(command.now, command.leaseMs),
        at: command.now,
      };
      return [{ type: 'DeliveryClaimed', data }];
    }
    case 'RecordAttempt': {
      // Fenced: only the attempt that holds the claim records (a lapsed one was taken over).
      if (!state.exists || state.claim?.attempt !== command.attempt) return [];
      const status = 'status' in command.result ? command.result.status : null;
      const error = 'error' in command.result ? command.result.error : null;
      const outcome: DeliveryOutcome =
        status !== null && status >= 200 && status < 300
          ? 'delivered'
          : status === 410
            ? 'gone'
            : state.failures < command.scheduleSeconds.length
              ? 'retry'
              : 'failed';
      const next_attempt_at = outcome === 'retry' ? plus(command.now, command.scheduleSeconds[state.failures] * 1000) : null;
      const data = {
        attempt: command.attempt,
        at: command.now,
        status,
        error,
        duration_ms: Math.round(command.durationMs),
        outcome,
        next_attempt_at,
      };
      return [{ type: 'DeliveryAttempted', data }];
    }
    case 'RequestRedelivery':
      if (!state.exists) return reject(new AppError('not_found', 'the job has no callback_url, so nothing to deliver'));
      return [{ type: 'DeliveryRequested', data: { at: command.now, by: command.by } }];
    default:
      return assertNever(command);
  }
}

export const deliveryDecider: Decider<DeliveryCommand, DeliveryEvent, DeliveryState> = {
  initialState: initialDeliveryState,
  evolve: evolveDelivery,
  decide: decideDelivery,
};
