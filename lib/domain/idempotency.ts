import type { Decider } from './decider';
import { AppError, assertNever, ignoreUnknown, type Rejection, reject } from './errors';

/**
 * An `Idempotency-Key` of one API token (DESIGN §8, Stripe's semantics), on its own stream
 * `idempotency-<sha256(token_id + "\n" + key)>`. The first 2xx answer to a creating POST sent
 * with the key is recorded with the request's fingerprint (method, route, parameters and the
 * canonical JSON of its body); for 24 hours the same request gets that answer again and creates
 * nothing, another request with the key is refused. A record older than 24 hours counts as
 * absent: the key is used again and the new record appended after the old one.
 */

// ---------------------------------------------------------------- events

export type IdempotentResponseRecorded = {
  readonly type: 'IdempotentResponseRecorded';
  readonly data: {
    readonly token_id: string;
    /** SHA-256 (hex) of the request: method, route and parameters, and the body's canonical JSON. */
    readonly fingerprint: string;
    readonly status: number;
    /** The answer's body as sent: JSON text, replayed byte for byte. */
    readonly body: string;
    readonly recorded_at: string;
  };
};

export type IdempotencyEvent = IdempotentResponseRecorded;

// ---------------------------------------------------------------- state

/** The latest record of the key (an older one only matters until it expires, and the latest is newer). */
export type IdempotencyState = { readonly recorded: IdempotentResponseRecorded['data'] | null };

/** How long a recorded answer is replayed (Stripe keeps keys for at least 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export const initialIdempotencyState = (): IdempotencyState => ({ recorded: null });

export function evolveIdempotency(state: IdempotencyState, event: IdempotencyEvent): IdempotencyState {
  switch (event.type) {
    case 'IdempotentResponseRecorded':
      return { recorded: event.data };
    default:
      // `.type`: a union of one member is not narrowed to never, its discriminant is.
      return ignoreUnknown(event.type, state);
  }
}

/**
 * What a request with this key gets at `now`: `absent` (never used, or its record is 24 hours
 * old or more: run the request), `replay` (the same request: the recorded answer), `mismatch`
 * (another request used the key: 422).
 */
export type IdempotencyVerdict =
  | { readonly kind: 'absent' }
  | { readonly kind: 'replay'; readonly status: number; readonly body: string }
  | { readonly kind: 'mismatch'; readonly recordedAt: string };

export function idempotencyVerdict(state: IdempotencyState, fingerprint: string, now: string): IdempotencyVerdict {
  const r = state.recorded;
  if (r === null || Date.parse(now) >= Date.parse(r.recorded_at) + IDEMPOTENCY_TTL_MS) return { kind: 'absent' };
  if (r.fingerprint !== fingerprint) return { kind: 'mismatch', recordedAt: r.recorded_at };
  return { kind: 'replay', status: r.status, body: r.body };
}

/** The 422 of a key used with another request; the same words wherever it is found out. */
export const keyReused = (recordedAt: string): AppError =>
  new AppError(
    'unprocessable_entity',
    `this Idempotency-Key was used at ${recordedAt} with a different request (method, path or body); use a new key for a new request`,
  );

// ---------------------------------------------------------------- commands

export type RecordResponse = {
  readonly type: 'RecordResponse';
  readonly token_id: string;
  readonly fingerprint: string;
  readonly status: number;
  readonly body: string;
  readonly now: string;
};

export type IdempotencyCommand = RecordResponse;

// ---------------------------------------------------------------- decide

/**
 * Records the answer when the key is free. The same request already recorded decides nothing:
 * the first answer stands (its caller replays it). Another request's live record is a 422.
 */
export function decideIdempotency(command: IdempotencyCommand, state: IdempotencyState): IdempotencyEvent[] | Rejection {
  switch (command.type) {
    case 'RecordResponse': {
      const verdict = idempotencyVerdict(state, command.fingerprint, command.now);
      switch (verdict.kind) {
        case 'absent': {
          const { token_id, fingerprint, status, body, now } = command;
          return [{ type: 'IdempotentResponseRecorded', data: { token_id, fingerprint, status, body, recorded_at: now } }];
        }
        case 'replay':
          return [];
        case 'mismatch':
          return reject(keyReused(verdict.recordedAt));
        default:
          return assertNever(verdict);
      }
    }
    default:
      return assertNever(command.type);
  }
}

export const idempotencyDecider: Decider<IdempotencyCommand, IdempotencyEvent, IdempotencyState> = {
  initialState: initialIdempotencyState,
  evolve: evolveIdempotency,
  decide: decideIdempotency,
};
