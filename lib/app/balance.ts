import { streams } from '../domain/ids';
import type { MediaSecondsCharged } from '../domain/job';
import { mediaSecondsAllowance } from '../domain/tenancy';
import type { EventStore } from '../ports/event-store';
import type { ReadQueries } from '../ports/read-store';
import { loadState } from './command-handler';
import { driveDecider } from './deciders';
import type { ReadModel } from './read-models';
import { readTotal, type Total, type TotalSpec } from './totals';

/**
 * Media-seconds balances without a hot spot: charges are recorded on each job's own stream, and
 * the `charges` read model keeps one document per charge (job and media reference), so a
 * redelivered charge is a no-op, and beside them one running total per drive (`charge_totals`,
 * see totals.ts), so a check reads one document however many files the drive imported. The
 * balance is exact: the drive's allowance (from its small stream) minus its total. Checks read
 * what is projected so far; under a burst of concurrent imports a drive can end slightly below
 * zero (check, then act), never charged twice.
 */

export const CHARGES = 'charges';
export const CHARGE_INDEXES = [['drive_id'], ['job_id']];
/** Seconds used per drive: the sum of its charges, kept as they are projected. */
export const CHARGE_TOTALS: TotalSpec = { collection: 'charge_totals', by: 'drive_id', field: 'seconds' };

export const chargeDocId = (jobId: string, ref: string) => JSON.stringify([jobId, ref]);

/** The `charges` read model: one fact per charge, written once (a duplicate changes nothing), totalled per drive. */
export const chargesModel: ReadModel = {
  name: CHARGES,
  // 2: the per-drive totals; a store built at 1 is rebuilt at start-up, which makes them.
  version: 2,
  kind: 'fact',
  handles: new Set(['MediaSecondsCharged']),
  docId: (e) => {
    const c = e.data as MediaSecondsCharged['data'];
    return chargeDocId(c.job_id, c.ref);
  },
  evolve: (_doc, e) => ({ _id: '', _rev: 0, ...(e.data as MediaSecondsCharged['data']) }),
  indexes: CHARGE_INDEXES,
  total: CHARGE_TOTALS,
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
  const used = async (driveId: string) => (await readTotal(deps.read, CHARGE_TOTALS, driveId)).value;
  return {
    async leftOf(driveId, allowance) {
      if (allowance === null) return null;
      return allowance - (await used(driveId));
    },
    async left(driveId, own) {
      const allowance = mediaSecondsAllowance((await loadState(deps.store, streams.drive(driveId), driveDecider)).state);
      if (allowance === null) return null;
      if (!own) return allowance - (await used(driveId));
      const total = await readTotal(deps.read, CHARGE_TOTALS, driveId);
      return allowance - total.value + (await heldOf(deps.read, total, own.jobId)) - own.chargedByJob;
    },
  };
}

/**
 * What `total` holds of a job's charges: those written (the job's few) and those pending whose
 * documents are not written yet. A running job replaces it with what it says it charged.
 */
async function heldOf(read: ReadQueries, total: Total, jobId: string): Promise<number> {
  const written = await read.sum(CHARGES, { job_id: jobId }, 'seconds');
  const pending = total.pending.filter(([id]) => (JSON.parse(id) as [string, string])[0] === jobId);
  if (pending.length === 0) return written;
  const ids = pending.map(([id]) => id);
  const docs = await read.getMany(CHARGES, ids);
  const arrived = new Set(docs.map((doc) => doc._id));
  return pending.reduce((n, [id, amount]) => (arrived.has(id) ? n : n + amount), written);
}
