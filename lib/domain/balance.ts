import type { Decider, SnapshotCodec } from './decider';
import { AppError, assertNever, ignoreUnknown, reject, type Rejection } from './errors';

/**
 * A drive's balances (DESIGN §8): media seconds and AI credits are reserved before the work that
 * spends them, settled at the exact amount used, or released when the work fails or is
 * cancelled. Every decision is made on the drive's own balance stream with its expected
 * revision, so two processes reserving at once cannot both take the last seconds: the one whose
 * append conflicts decides again on the state the other left. What is left is the allowance
 * (the drive's settings, what the admin granted) less what was used and what is reserved; a
 * reservation that would make it negative is refused. No balance goes below zero.
 *
 * A reservation is named by its holder (`<job id>:<what>`), so a retried attempt that reserves
 * again for the same file finds its reservation still open and takes nothing more.
 */

export type BalanceKind = 'media_seconds' | 'ai_credits';
export const BALANCE_KINDS: readonly BalanceKind[] = ['media_seconds', 'ai_credits'];

/** What the admin granted, per kind (`null`: unlimited). */
export type Allowances = { readonly [K in BalanceKind]: number | null };

// ---------------------------------------------------------------- events

type ReservationRef = { readonly drive_id: string; readonly reservation_id: string; readonly job_id: string; readonly kind: BalanceKind };

export type BalanceReserved = {
  readonly type: 'BalanceReserved';
  readonly data: ReservationRef & { readonly amount: number; readonly reserved_at: string };
};
/** The work used `used` (at most what was reserved); the rest of the reservation is free again. */
export type ReservationSettled = {
  readonly type: 'ReservationSettled';
  readonly data: ReservationRef & { readonly used: number; readonly settled_at: string };
};
export type ReservationReleased = {
  readonly type: 'ReservationReleased';
  readonly data: ReservationRef & { readonly reason: string; readonly released_at: string };
};

export type BalanceEvent = BalanceReserved | ReservationSettled | ReservationReleased;

// ---------------------------------------------------------------- state

type Open = { readonly drive_id: string; readonly job_id: string; readonly kind: BalanceKind; readonly amount: number };

export type BalanceState = {
  readonly used: { readonly [K in BalanceKind]: number };
  /** Reservations neither settled nor released, by id. */
  readonly open: ReadonlyMap<string, Open>;
};

export const initialBalanceState = (): BalanceState => ({ used: { media_seconds: 0, ai_credits: 0 }, open: new Map() });

const withoutOpen = (open: ReadonlyMap<string, Open>, id: string) => {
  const next = new Map(open);
  next.delete(id);
  return next;
};

export function evolveBalance(state: BalanceState, event: BalanceEvent): BalanceState {
  switch (event.type) {
    case 'BalanceReserved': {
      const { reservation_id, drive_id, job_id, kind, amount } = event.data;
      return { ...state, open: new Map(state.open).set(reservation_id, { drive_id, job_id, kind, amount }) };
    }
    case 'ReservationSettled': {
      const { kind, used, reservation_id } = event.data;
      return { used: { ...state.used, [kind]: state.used[kind] + used }, open: withoutOpen(state.open, reservation_id) };
    }
    case 'ReservationReleased':
      return { ...state, open: withoutOpen(state.open, event.data.reservation_id) };
    default:
      return ignoreUnknown(event, state);
  }
}

/** Reserved and not yet settled or released, per kind. */
export function reserved(state: BalanceState, kind: BalanceKind): number {
  let total = 0;
  for (const r of state.open.values()) if (r.kind === kind) total += r.amount;
  return total;
}

/** What can still be reserved (`null`: unlimited). */
export function left(state: BalanceState, allowances: Allowances, kind: BalanceKind): number | null {
  const allowance = allowances[kind];
  return allowance === null ? null : allowance - state.used[kind] - reserved(state, kind);
}

// ---------------------------------------------------------------- commands

export type Reserve = {
  readonly type: 'Reserve';
  readonly driveId: string;
  readonly reservationId: string;
  readonly jobId: string;
  readonly kind: BalanceKind;
  readonly amount: number;
  /**
   * Where less than `amount` is left, reserve what is left if it is at least this much (a turn
   * that can do less with less: its most, or what is left). Absent: `amount` or nothing.
   */
  readonly atLeast?: number;
  /** The drive's allowances as they are now (its settings stream). */
  readonly allowances: Allowances;
  readonly now: string;
};
export type Settle = { readonly type: 'Settle'; readonly reservationId: string; readonly used: number; readonly now: string };
export type Release = { readonly type: 'Release'; readonly reservationId: string; readonly reason: string; readonly now: string };
/** Releases every reservation the job still holds (it ended: stopped, failed, cancelled). */
export type ReleaseJob = { readonly type: 'ReleaseJob'; readonly jobId: string; readonly reason: string; readonly now: string };

export type BalanceCommand = Reserve | Settle | Release | ReleaseJob;

/** The refusal of a reservation the balance cannot cover: a typed outcome the work reports. */
export const NOT_ENOUGH = 'insufficient_balance';

const UNITS: Record<BalanceKind, string> = { media_seconds: 'media seconds', ai_credits: 'AI credits' };

// ---------------------------------------------------------------- decide

export function decideBalance(command: BalanceCommand, state: BalanceState): BalanceEvent[] | Rejection {
  switch (command.type) {
    case 'Reserve': {
      if (state.open.has(command.reservationId)) return []; // a retried attempt holds it already
      if (!(command.amount >= 0) || !Number.isFinite(command.amount)) {
        return reject(new AppError('invalid_input', `a reservation of ${command.amount} ${UNITS[command.kind]} is not a quantity`));
      }
      const available = left(state, command.allowances, command.kind);
      const least = Math.min(command.atLeast ?? command.amount, command.amount);
      if (available !== null && least > available) {
        const shown = Math.max(0, Math.floor(available * 100) / 100);
        return reject(
          new AppError('payment_required', `not enough ${UNITS[command.kind]}: ${least} needed and the drive has ${shown} left`, {
            extra: { state: NOT_ENOUGH },
          }),
        );
      }
      const { driveId: drive_id, reservationId: reservation_id, jobId: job_id, kind } = command;
      // What is left, in whole units when less than asked (`least` fits, so this is at least `least`).
      const amount = available === null || command.amount <= available ? command.amount : Math.max(least, Math.floor(available));
      return [{ type: 'BalanceReserved', data: { drive_id, reservation_id, job_id, kind, amount, reserved_at: command.now } }];
    }
    case 'Settle': {
      const open = state.open.get(command.reservationId);
      if (!open) return []; // settled or released already: a redelivery
      if (!(command.used >= 0) || command.used > open.amount) {
        return reject(
          new AppError(
            'internal_error',
            `settling ${command.used} of a reservation of ${open.amount} ${UNITS[open.kind]}: reserve the most first`,
          ),
        );
      }
      const data = { ...refOf(command.reservationId, open), used: command.used, settled_at: command.now };
      return [{ type: 'ReservationSettled', data }];
    }
    case 'Release': {
      const open = state.open.get(command.reservationId);
      if (!open) return [];
      return [released(command.reservationId, open, command.reason, command.now)];
    }
    case 'ReleaseJob': {
      const events: BalanceEvent[] = [];
      for (const [id, open] of state.open) if (open.job_id === command.jobId) events.push(released(id, open, command.reason, command.now));
      return events;
    }
    default:
      return assertNever(command);
  }
}

/** Every event names its drive, job and kind, so a reader of `$all` needs neither the stream name nor the reservation. */
const refOf = (reservationId: string, open: Open): ReservationRef => ({
  drive_id: open.drive_id,
  reservation_id: reservationId,
  job_id: open.job_id,
  kind: open.kind,
});

const released = (reservationId: string, open: Open, reason: string, now: string): ReservationReleased => ({
  type: 'ReservationReleased',
  data: { ...refOf(reservationId, open), reason, released_at: now },
});

/** A balance as a snapshot: what was used, and the open reservations as [id, reservation] pairs. */
export const balanceSnapshot: SnapshotCodec<BalanceState> = {
  version: 1,
  encode: (state) => ({ used: state.used, open: [...state.open] }),
  decode: (json) => {
    const { used, open } = json as { used: BalanceState['used']; open: [string, Open][] };
    return { used: { media_seconds: used.media_seconds, ai_credits: used.ai_credits }, open: new Map(open) };
  },
};

export const balanceDecider: Decider<BalanceCommand, BalanceEvent, BalanceState> = {
  initialState: initialBalanceState,
  evolve: evolveBalance,
  decide: decideBalance,
};
