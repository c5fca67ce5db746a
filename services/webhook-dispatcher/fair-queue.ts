import type { Condition, Doc, Filter, ReadQueries } from '../../lib/ports/read-store';
import { DELIVERIES } from '../../lib/read-models/deliveries';

/**
 * Which due delivery to attempt next, fairly (issue 19, finding 1). Drives take turns, one
 * delivery each per turn; within a drive its receiving hosts take turns. Slots are capped in all,
 * per drive and per host name of a drive, so a tenant whose receivers hang holds at most its own
 * slots and every other drive's next delivery starts as soon as it is due.
 *
 * Nothing but the next candidates is loaded: the `deliveries` read model is walked with keyset
 * queries over its (state, drive_id, host, due_at) index, a drive, then a host, then the lane's
 * oldest few rows, so a turn costs queries per drive with something due, never a read of every
 * due row. A host is the URL's host name without its port: four ports of one host are one host.
 */

export type FairLimits = {
  /**
   * Attempts in flight in all. The caps below bound what receivers that hang can hold; a lane
   * (a drive's host) whose last attempt was answered within QUICK_MS may go beyond them into
   * idle slots, but never into the last `perDrive` of them, which stay for lanes under their caps.
   */
  readonly concurrency: number;
  /** Attempts in flight per drive: what one tenant's dead receivers can hold at most. */
  readonly perDrive: number;
  /** Attempts in flight per host name of one drive. */
  readonly perHost: number;
};

export type FairQueue = ReturnType<typeof createFairQueue>;

/** Drives remembered with the host they were last served from; a forgotten drive starts again at its first host. */
const REMEMBERED_DRIVES = 4096;

/**
 * An attempt answered within this is quick: its lane may borrow idle slots. A receiver that hangs
 * holds its slot until the attempt's timeout, so its lane never borrows; one that starts hanging
 * holds at most the borrowed slots until they time out, then stops borrowing.
 */
export const QUICK_MS = 1000;

export function createFairQueue(read: ReadQueries, limits: FairLimits) {
  const slots = createSlots();
  const lastHost = new Map<string, string>();
  const quickLanes = boundedSet(REMEMBERED_DRIVES);
  let lastDrive = '';
  /** Beyond its caps, a quick lane may take a slot while more than `perDrive` are free. */
  const mayBorrow = (driveId: string, host: string) =>
    slots.total() < limits.concurrency - limits.perDrive && quickLanes.has(laneKeyOf(driveId, host));

  /** Due, and not held by a live claim (another replica's, or ours once projected). */
  const due = (now: string, where: Record<string, Condition>): Filter => ({
    state: 'pending',
    due_at: { $lte: now },
    ...where,
    $or: [{ claimed_until: null }, { claimed_until: { $lt: now } }],
  });

  /** The first value of `field` after `after` among due rows matching `where`, wrapping round once; null when there are none. */
  async function nextKey(now: string, field: 'drive_id' | 'host', after: string, where: Record<string, string> = {}) {
    for (const from of after === '' ? [''] : [after, '']) {
      const [row] = await read.find(DELIVERIES, due(now, { ...where, [field]: { $gt: from } }), { sort: [[field, 1]], limit: 1 });
      if (row) return String(row[field]);
    }
    return null;
  }

  /**
   * The lane's oldest due row not yet taken: in flight here (claims are projected a moment after
   * they are made) or tried earlier in this round (a claim refused at once frees its slot at once).
   */
  async function oldestIn(now: string, driveId: string, host: string, round: Round): Promise<Doc | null> {
    const rows = await read.find(DELIVERIES, due(now, { drive_id: driveId, host }), {
      sort: [['due_at', 1]],
      limit: slots.lane(driveId, host) + round.takenIn(driveId, host) + 1,
    });
    return rows.find((row) => !slots.has(row._id) && !round.taken.has(row._id)) ?? null;
  }

  /** The next delivery of one drive, its hosts in turn; null when each is saturated or has nothing due. */
  async function nextOfDrive(now: string, driveId: string, round: Round): Promise<Doc | null> {
    const driveFull = slots.drive(driveId) >= limits.perDrive;
    if (driveFull && quickLanes.size === 0) return null;
    const seen = new Set<string>();
    let host = await nextKey(now, 'host', lastHost.get(driveId) ?? '', { drive_id: driveId });
    if (host === null) lastHost.delete(driveId);
    while (host !== null && !seen.has(host)) {
      seen.add(host);
      const underCaps = !driveFull && slots.lane(driveId, host) < limits.perHost;
      const row = underCaps || mayBorrow(driveId, host) ? await oldestIn(now, driveId, host, round) : null;
      if (row) return (remember(driveId, host), row);
      host = await nextKey(now, 'host', host, { drive_id: driveId });
    }
    return null;
  }

  function remember(driveId: string, host: string): void {
    lastHost.delete(driveId);
    lastHost.set(driveId, host);
    if (lastHost.size > REMEMBERED_DRIVES) lastHost.delete(lastHost.keys().next().value!);
  }

  /** The next delivery to attempt, from the drive after the one served last; null when none may start. */
  async function next(now: string, round: Round): Promise<Doc | null> {
    if (slots.total() >= limits.concurrency || round.taken.size >= round.budget) return null;
    // Round the drives once at most; a set, not the first drive, ends it (the rows change meanwhile).
    const seen = new Set<string>();
    let driveId = await nextKey(now, 'drive_id', lastDrive);
    while (driveId !== null && !seen.has(driveId)) {
      seen.add(driveId);
      const row = await nextOfDrive(now, driveId, round);
      if (row) return (round.take(row), (lastDrive = driveId), row);
      driveId = await nextKey(now, 'drive_id', driveId);
    }
    return null;
  }

  return {
    /**
     * One round of picks at `now`, as many as there are free slots at its start: its `next` is
     * the next delivery to attempt, null when every slot is taken, every drive with something due
     * is at its limits, or the round has had its share. The caller `enter`s each before asking
     * again. A round takes a row once, so claims refused at once cannot spin it.
     */
    round(now: string) {
      const round = createRound(limits.concurrency - slots.total());
      return { next: () => next(now, round) };
    },
    enter: (row: Doc) => slots.enter(row._id, laneOf(row)),
    /** The attempt ended; `quick` when its receiver answered (whatever it answered) within QUICK_MS. */
    leave: (row: Doc, quick = false) => {
      slots.leave(row._id, laneOf(row));
      const lane = laneOf(row);
      if (quick) quickLanes.add(laneKeyOf(lane.driveId, lane.host));
      else quickLanes.delete(laneKeyOf(lane.driveId, lane.host));
    },
    inFlight: () => slots.total(),
    /** Drives with attempts in flight here, and the most one of them holds (for metrics). */
    drivesInFlight: () => slots.drives(),
  };
}

type Lane = { readonly driveId: string; readonly host: string };
type Round = ReturnType<typeof createRound>;

/** The rows a round has taken, and how many per lane. */
function createRound(budget: number) {
  const taken = new Set<string>();
  const perLane = new Map<string, number>();
  const key = (driveId: string, host: string) => `${driveId} ${host}`;
  return {
    budget,
    taken: taken as ReadonlySet<string>,
    takenIn: (driveId: string, host: string) => perLane.get(key(driveId, host)) ?? 0,
    take(row: Doc) {
      const { driveId, host } = laneOf(row);
      taken.add(row._id);
      perLane.set(key(driveId, host), (perLane.get(key(driveId, host)) ?? 0) + 1);
    },
  };
}

const laneOf = (row: Doc): Lane => ({ driveId: String(row.drive_id), host: String(row.host) });
const laneKeyOf = (driveId: string, host: string) => `${driveId} ${host}`;

/** A set that forgets its oldest member beyond `max`. */
function boundedSet(max: number) {
  const members = new Set<string>();
  return {
    get size() {
      return members.size;
    },
    has: (key: string) => members.has(key),
    add(key: string) {
      members.delete(key);
      members.add(key);
      if (members.size > max) members.delete(members.values().next().value!);
    },
    delete: (key: string) => void members.delete(key),
  };
}

/** Attempts in flight by job id, and counts per drive and per lane (drive and host). */
function createSlots() {
  const jobs = new Set<string>();
  const counts = new Map<string, number>();
  const driveKey = (lane: Lane) => `d ${lane.driveId}`;
  const laneKey = (lane: Lane) => `l ${lane.driveId} ${lane.host}`;
  const add = (key: string, by: number) => {
    const n = (counts.get(key) ?? 0) + by;
    if (n <= 0) counts.delete(key);
    else counts.set(key, n);
  };
  return {
    has: (jobId: string) => jobs.has(jobId),
    total: () => jobs.size,
    drive: (driveId: string) => counts.get(driveKey({ driveId, host: '' })) ?? 0,
    lane: (driveId: string, host: string) => counts.get(laneKey({ driveId, host })) ?? 0,
    drives() {
      const held = [...counts].filter(([key]) => key.startsWith('d '));
      return { drives: held.length, most: Math.max(0, ...held.map(([, n]) => n)) };
    },
    enter(jobId: string, lane: Lane) {
      jobs.add(jobId);
      add(driveKey(lane), 1);
      add(laneKey(lane), 1);
    },
    leave(jobId: string, lane: Lane) {
      if (!jobs.delete(jobId)) return;
      add(driveKey(lane), -1);
      add(laneKey(lane), -1);
    },
  };
}
