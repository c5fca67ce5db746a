import type { Logger } from 'pino';
import type { ReadQueries } from '../ports/read-store';
import { JOBS } from '../read-models/jobs';

/**
 * Admission control: a drive may have at most `limit` unfinished jobs (queued or running, of any
 * type); a request for one more is refused with 429 until some have finished. Without it, one
 * drive's backlog grows without bound and, past what each job type's consumer group keeps in
 * flight, holds back every other drive's jobs (docs/decisions.md, "Admission control").
 *
 * The count is the jobs read model's, read at most once per `refreshMs` per drive and decided on
 * in between without waiting (the accept path stays a map look-up), each job admitted meanwhile
 * counted at once (and added to a count read meanwhile). So the limit is a guard, not an exact
 * bound: jobs the projector has not reached yet when the count is read let a burst pass it by a
 * little. A count that cannot be read admits (logged): a read store hiccup is no reason to refuse
 * work.
 */

export type Admission = {
  /** Null when the drive may queue another job, else why not (its unfinished jobs, against the limit). */
  refusal(driveId: string): AdmissionRefusal | null | Promise<AdmissionRefusal | null>;
  stats(): AdmissionStats;
};

/** Requests refused since start, and the drives whose last count is at the limit (for /metrics). */
export type AdmissionStats = { readonly refused: number; readonly drivesAtLimit: number };

export type AdmissionRefusal = { readonly unfinished: number; readonly limit: number };

export const UNFINISHED_STATES = ['queued', 'running'] as const;

/** The drive's jobs queued or running, as the jobs read model has them: what the limit bounds. */
export const countUnfinished = (queries: Pick<ReadQueries, 'count'>, driveId: string): Promise<number> =>
  queries.count(JOBS, { drive_id: driveId, job_state: { $in: [...UNFINISHED_STATES] } });

/** Drives whose counts are kept; the least recently asked go first. */
const REMEMBERED_DRIVES = 10_000;

/** `admitted`: jobs admitted since the drive was first asked about, so that a count can add those admitted while it was read. */
type Known = { unfinished: number; admitted: number; at: number; reading: Promise<number> | null };

export function createAdmission(deps: {
  queries: Pick<ReadQueries, 'count'>;
  /** 0: no limit (nothing is counted). */
  limit: number;
  refreshMs?: number;
  log: Logger;
  now?: () => number;
}): Admission {
  const { limit } = deps;
  if (limit === 0) return { refusal: () => null, stats: () => ({ refused: 0, drivesAtLimit: 0 }) };
  const refreshMs = deps.refreshMs ?? 1000;
  const now = deps.now ?? Date.now;
  const known = new Map<string, Known>();

  const read = (driveId: string, entry: Known): Promise<number> => {
    if (entry.reading) return entry.reading;
    const admittedBefore = entry.admitted;
    return (entry.reading = countUnfinished(deps.queries, driveId)
      .then(
        (unfinished) => {
          // The jobs admitted while it was read are not in it.
          entry.unfinished = unfinished + (entry.admitted - admittedBefore);
          return unfinished;
        },
        (err: unknown) => {
          deps.log.warn({ err, drive_id: driveId }, 'unfinished jobs not counted; admitting the job');
          return entry.unfinished;
        },
      )
      .finally(() => {
        entry.at = now();
        entry.reading = null;
      }));
  };

  // An admitted job counts at once: until the next read, the drive's count grows with each.
  let refused = 0;
  const decide = (entry: Known): AdmissionRefusal | null => {
    if (entry.unfinished >= limit) {
      refused += 1;
      return { unfinished: entry.unfinished, limit };
    }
    entry.unfinished += 1;
    entry.admitted += 1;
    return null;
  };

  return {
    refusal(driveId) {
      const entry = known.get(driveId);
      if (!entry) {
        const fresh: Known = { unfinished: 0, admitted: 0, at: 0, reading: null };
        if (known.size >= REMEMBERED_DRIVES) known.delete(known.keys().next().value!);
        known.set(driveId, fresh);
        return read(driveId, fresh).then(() => decide(fresh));
      }
      // Kept in the order drives were last asked about.
      known.delete(driveId);
      known.set(driveId, entry);
      if (entry.at === 0 && entry.reading) return entry.reading.then(() => decide(entry));
      if (now() - entry.at >= refreshMs) void read(driveId, entry);
      return decide(entry);
    },
    stats() {
      let drivesAtLimit = 0;
      for (const entry of known.values()) if (entry.unfinished >= limit) drivesAtLimit += 1;
      return { refused, drivesAtLimit };
    },
  };
}
