import { streams } from '../domain/ids';
import type { MediaSecondsCharged } from '../domain/job';
import { mediaSecondsAllowance } from '../domain/tenancy';
import type { EventStore } from '../ports/event-store';
import type { ReadQueries } from '../ports/read-store';
import { loadState } from './command-handler';
import { driveDecider } from './deciders';
import type { ReadModel } from './read-models';

/**
 * Media-seconds balances without a hot spot: charges are recorded on each job's own stream, and
 * the `charges` read model keeps one document per charge (job and media reference), so a
 * redelivered charge is a no-op and the balance is exact: the drive's allowance (from its small
 * stream) minus the sum of its charges. Checks read what is projected so far; under a burst of
 * concurrent imports a drive can end slightly below zero (check, then act), never charged twice.
 */

export const CHARGES = 'charges';
export const CHARGE_INDEXES = [['drive_id'], ['job_id']];

export const chargeDocId = (jobId: string, ref: string) => JSON.stringify([jobId, ref]);

/** The `charges` read model: one fact per charge, written once (a duplicate changes nothing). */
export const chargesModel: ReadModel = {
  name: CHARGES,
  version: 1,
  kind: 'fact',
  handles: new Set(['MediaSecondsCharged']),
  docId: (e) => {
    const c = e.data as MediaSecondsCharged['data'];
    return chargeDocId(c.job_id, c.ref);
  },
  evolve: (_doc, e) => ({ _id: '', _rev: 0, ...(e.data as MediaSecondsCharged['data']) }),
  indexes: CHARGE_INDEXES,
};

export interface BalanceReader {
  /**
   * Seconds the drive may still import; `null` when it is unlimited. A running job passes what it
   * has charged itself, which the read model may not have seen yet.
   */
  left(driveId: string, own?: { jobId: string; chargedByJob: number }): Promise<number | null>;
  /** The same for a known allowance (the authenticated principal carries it): no drive stream read. */
  leftOf(driveId: string, allowance: number | null): Promise<number | null>;
}

export function createBalanceReader(deps: { store: EventStore; read: ReadQueries }): BalanceReader {
  return {
    async leftOf(driveId, allowance) {
      if (allowance === null) return null;
      return allowance - (await deps.read.sum(CHARGES, { drive_id: driveId }, 'seconds'));
    },
    async left(driveId, own) {
      const allowance = mediaSecondsAllowance((await loadState(deps.store, streams.drive(driveId), driveDecider)).state);
      if (allowance === null) return null;
      const used = await deps.read.sum(CHARGES, { drive_id: driveId }, 'seconds');
      if (!own) return allowance - used;
      const projectedOwn = await deps.read.sum(CHARGES, { job_id: own.jobId }, 'seconds');
      return allowance - used + projectedOwn - own.chargedByJob;
    },
  };
}
