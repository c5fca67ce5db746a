import {
  balanceDecider,
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
import type { EventStore } from '../ports/event-store';
import { commandHandler } from './command-handler';
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

export interface Balances {
  /** Reserves `amount`; refused with a `payment_required` AppError when the balance cannot cover it. */
  reserve(r: { driveId: string; reservationId: string; jobId: string; kind: BalanceKind; amount: number }): Promise<void>;
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

export function createBalances(deps: { store: EventStore; clock: Clock; ids: Ids }): Balances {
  const balances = commandHandler(deps.store, balanceDecider, streams.balance);
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

  return {
    async reserve(r) {
      const command = { type: 'Reserve' as const, ...r, allowances: await allowancesOf(r.driveId), now: now() };
      await run(r.driveId, command);
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

const allowances = (drive: DriveState): Allowances => ({
  media_seconds: mediaSecondsAllowance(drive),
  ai_credits: drive.exists ? drive.settings.ai_credits : 0,
});

const figures = (state: BalanceState, granted: Allowances, kind: BalanceKind): BalanceFigures => ({
  allowance: granted[kind],
  used: state.used[kind],
  reserved: reserved(state, kind),
  left: left(state, granted, kind),
});
