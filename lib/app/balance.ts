import type { MediaSecondsCharged } from '../domain/job';
import type { ReadModel } from './read-models';
import type { TotalSpec } from './totals';

/**
 * Balances (DESIGN §8). Decisions are made on each drive's balance stream (lib/domain/balance.ts):
 * work reserves before it spends, settles at what it used, releases what it did not. The drive's
 * allowances come from its settings stream. Commands on one balance stream are taken one at a
 * time within a process, so a process's own jobs never conflict with each other; another
 * process's append makes one conflict, and the command decides again on the new state.
 *
 * Beside it, each job records what it was charged on its own stream (`MediaSecondsCharged`),
 * and the `charges` read model keeps one document per charge and a running total per drive: the
 * ledger operators and data teams read. It decides nothing.
 */

/**
 * The least a drive must have left for an import to be accepted. No file's length is known at
 * accept (URL and upload items declare bytes at most), and a file is charged what it lasts, so
 * less than a second left would fail every file of any real media: 402 now, not a job of
 * failures later.
 */
export const LEAST_MEDIA_SECONDS_TO_ACCEPT = 1;

/** Why an import is refused at accept for the drive's media seconds `left` (null: unlimited), or null. */
export function mediaSecondsRefusal(left: number | null): string | null {
  if (left === null || left >= LEAST_MEDIA_SECONDS_TO_ACCEPT) return null;
  const shown = Math.max(0, Math.floor(left * 10) / 10);
  return `the drive has no media seconds left to import with (${shown} s, under the ${LEAST_MEDIA_SECONDS_TO_ACCEPT} s a file needs); ask its admin for more`;
}

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
