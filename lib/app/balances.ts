import {
  balanceDecider,
  balanceSnapshot,
  BALANCE_KINDS,
  left,
  reserved,
  type Allowances,
  type BalanceCommand,
  type BalanceKind,
  type BalanceState,
} from '../domain/balance';
import { streams } from '../domain/ids';
import { mediaSecondsAllowance, type DriveState, driveDecider } from '../domain/tenancy';
import type { Clock, Ids } from '../ports/clock';
import type { AllOrNothing, AppendResult, EventStore, StreamAppend } from '../ports/event-store';
import { appendInOrder, commandHandler, decideNext } from './command-handler';
import type { SnapshotStore } from './snapshots';
import { keyedSerial } from './keyed-serial';

/**
 * The drives' balances, decided on their balance streams (lib/domain/balance.ts; why, in
 * lib/app/balance.ts). Used by the processors (reserve, settle, release), the accept path (is
 * anything left at all) and operators (`admin drive show`).
 */

export type BalanceFigures = {
  readonly allowance: number | null;
  readonly used: number;
  readonly reserved: number;
  readonly left: number | null;
};

export type Reservation = { driveId: string; reservationId: string; jobId: string; kind: BalanceKind; amount: number };

export interface Balances {
  /**
   * Reserves `amount`, or with `atLeast` what is left when that is less (at least `atLeast`);
   * refused with a `payment_required` AppError when the balance cannot cover it. Resolves what
   * the reservation holds (what it held already, for a reservation made before).
   */
  reserve(r: Reservation & { atLeast?: number }): Promise<number>;
  /**
   * What the appends of `before`, `reserve` (unless `reserved` is false: held already), the
   * appends of `between`, `settle` at `used` and the appends of `after` do one after the other, in
   * one `appendInOrder`, in the drive's turn: one commit where there were up to four. Refused like
   * `reserve`, before anything is appended. Resolves the appends' results: on a conflict, those
   * before it were made (as awaited appends would have been) and the caller decides again from
   * the streams as they are. `before` is where a job's fence goes (JobContext.fence).
   */
  reserveAndSettle(
    r: Reservation & { used: number; reserve: boolean },
    between: StreamAppend[],
    after: StreamAppend[],
    before?: StreamAppend[],
  ): Promise<AppendResult[]>;
  /**
   * The same, all or nothing (`EventStore.appendAll`): on a conflict nothing is appended, and
   * `index` names the append of [reserve, between…, settle, after…] that conflicted. Null where
   * the store cannot append to several streams as one (EventStoreDB): nothing was appended.
   */
  reserveAndSettleWhole(
    r: Reservation & { used: number; reserve: boolean },
    between: StreamAppend[],
    after: StreamAppend[],
  ): Promise<AllOrNothing | null>;
  settle(driveId: string, reservationId: string, used: number): Promise<void>;
  release(driveId: string, reservationId: string, reason: string): Promise<void>;
  /** Releases whatever the job still holds (it ended). */
  releaseJob(driveId: string, jobId: string, reason: string): Promise<void>;
  /** Allowance, used, reserved and left, per kind, as the balance stream says now. */
  show(driveId: string): Promise<Record<BalanceKind, BalanceFigures>>;
  /** Media seconds left for a known allowance (the authenticated principal carries it): `null` when unlimited. */
  mediaSecondsLeft(driveId: string, allowance: number | null): Promise<number | null>;
}

/** A hot drive's balance stream sees conflicts from other processes: more tries than the default. */
const MAX_ATTEMPTS = 30;

/** `snapshots`: where the balance streams' folds are kept (lib/app/snapshots.ts); without, each process folds a stream whole on first read. */
export function createBalances(deps: {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  snapshots?: SnapshotStore;
  /** Events between two snapshots (1,000 unless told). */
  snapshotEvery?: number;
}): Balances {
  const snapshots = deps.snapshots && { store: deps.snapshots, codec: balanceSnapshot, every: deps.snapshotEvery };
  const balances = commandHandler(deps.store, balanceDecider, streams.balance, snapshots);
  const drives = commandHandler(deps.store, driveDecider, streams.drive);
  const serial = keyedSerial();
  const now = () => deps.clock.now().toISOString();
  const run = (driveId: string, command: BalanceCommand) =>
    serial(driveId, () =>
      balances.handle(driveId, command, {
        newId: deps.ids.uuidv7,
        metadata: { partition_key: driveId, drive_id: driveId },
        maxAttempts: MAX_ATTEMPTS,
      }),
    );
  const stateOf = async (driveId: string) => (await balances.load(driveId)).state;
  const allowancesOf = async (driveId: string) => allowances((await drives.load(driveId)).state);
  /** [reserve, between…, settle, after…] decided on the balance as it is, appended by `append`, in the drive's turn. */
  const inTheDrivesTurn = async <T>(
    r: Reservation & { used: number; reserve: boolean },
    between: StreamAppend[],
    after: StreamAppend[],
    append: (appends: StreamAppend[]) => Promise<T>,
    before: StreamAppend[] = [],
  ): Promise<T> => {
    const allowances = r.reserve ? await allowancesOf(r.driveId) : null;
    return serial(r.driveId, async () => {
      const { state, revision } = await balances.load(r.driveId);
      const options = { newId: deps.ids.uuidv7, metadata: { partition_key: r.driveId, drive_id: r.driveId } };
      const steps = inTurn(streams.balance(r.driveId), state, revision);
      const reserve = allowances ? steps.decide({ type: 'Reserve', ...r, allowances, now: now() }, options) : [];
      const settle = steps.decide({ type: 'Settle', reservationId: r.reservationId, used: r.used, now: now() }, options);
      return append([...before, ...reserve, ...between, ...settle, ...after]);
    });
  };

  return {
    async reserve(r) {
      const command = { type: 'Reserve' as const, ...r, allowances: await allowancesOf(r.driveId), now: now() };
      const { state } = await run(r.driveId, command);
      return state.open.get(r.reservationId)?.amount ?? 0;
    },
    reserveAndSettle: (r, between, after, before) =>
      inTheDrivesTurn(
        r,
        between,
        after,
        (appends) => (appends.length === 0 ? Promise.resolve([]) : appendInOrder(deps.store, appends)),
        before,
      ),
    async reserveAndSettleWhole(r, between, after) {
      const all = deps.store.appendAll?.bind(deps.store);
      if (!all) return null;
      return inTheDrivesTurn(r, between, after, (appends) =>
        appends.length === 0 ? Promise.resolve({ ok: true, results: [] }) : all(appends),
      );
    },
    async settle(driveId, reservationId, used) {
      await run(driveId, { type: 'Settle', reservationId, used, now: now() });
    },
    async release(driveId, reservationId, reason) {
      await run(driveId, { type: 'Release', reservationId, reason, now: now() });
    },
    async releaseJob(driveId, jobId, reason) {
      await run(driveId, { type: 'ReleaseJob', jobId, reason, now: now() });
    },
    async show(driveId) {
      const [state, granted] = await Promise.all([stateOf(driveId), allowancesOf(driveId)]);
      return Object.fromEntries(BALANCE_KINDS.map((kind) => [kind, figures(state, granted, kind)])) as Record<BalanceKind, BalanceFigures>;
    },
    async mediaSecondsLeft(driveId, allowance) {
      if (allowance === null) return null;
      return left(await stateOf(driveId), { media_seconds: allowance, ai_credits: 0 }, 'media_seconds');
    },
  };
}

/**
 * Balance commands decided one after the other on one stream, each on the state the ones before
 * left, each its own append expecting the revision they left: the appends for `appendInOrder`.
 */
function inTurn(streamId: string, state: BalanceState, revision: number | null) {
  let at = { state, revision };
  return {
    decide(
      command: BalanceCommand,
      options: { newId: () => string; metadata: { partition_key: string; drive_id: string } },
    ): StreamAppend[] {
      const next = decideNext(streamId, balanceDecider, at.state, at.revision, command, options);
      at = next;
      return next.appends;
    },
  };
}

const allowances = (drive: DriveState): Allowances => ({
  media_seconds: mediaSecondsAllowance(drive),
  ai_credits: drive.exists ? drive.settings.ai_credits : 0,
});

/**
 * The figures as people read them: to the millisecond (sums of seconds carry float noise, 2.453000000000003),
 * and `left` never below zero (an allowance lowered under what was used leaves nothing, not -13).
 */
const figures = (state: BalanceState, granted: Allowances, kind: BalanceKind): BalanceFigures => {
  const remaining = left(state, granted, kind);
  return {
    allowance: granted[kind],
    used: thousandths(state.used[kind]),
    reserved: thousandths(reserved(state, kind)),
    left: remaining === null ? null : Math.max(0, thousandths(remaining)),
  };
};

const thousandths = (n: number): number => Math.round(n * 1000) / 1000;
