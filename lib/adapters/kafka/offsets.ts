/**
 * Per-partition bookkeeping of the Kafka consumer: which messages were taken on, which have
 * settled, and so which offset may be committed. Kafka's committed offset is the next one to
 * read, so the commit for a partition is its low-water mark: the first message taken on that has
 * not settled, or one past the last taken when all have. A message settling out of order (a
 * short job finishing before a long one) moves nothing until everything before it settled.
 * Pure and synchronous, so the rules are tested without a broker.
 */

export type PartitionOffset = { readonly partition: number; readonly offset: string };

type Entry = { readonly offset: bigint; settled: boolean };

type PartitionState = {
  /**
   * Taken on, in offset order, from `head` on: settled entries at the front are passed as the mark
   * moves and dropped in chunks (a job type keeps up to 100,000 in flight: a `shift()` per
   * settlement moved the whole array each time).
   */
  readonly entries: Entry[];
  head: number;
  readonly byOffset: Map<bigint, Entry>;
  /** One past the last message taken on. */
  next: bigint;
  /** The offset last committed (or known committed) by this member; null before the first. */
  committed: bigint | null;
  highWatermark: bigint | null;
};

export interface OffsetTracker {
  /** Whether `offset` of `partition` was already taken on (a refetch after a rejoin). */
  isTaken(partition: number, offset: string): boolean;
  /** Records a message taken on; a partition's offsets arrive in increasing order. */
  take(partition: number, offset: string): void;
  /** Records a message as settled; false when it is not (or no longer) tracked. */
  settle(partition: number, offset: string): boolean;
  /** The partitions whose low-water mark moved past their last commit, with the offset to commit. */
  due(): PartitionOffset[];
  /** Records a successful commit. */
  committed(commits: readonly PartitionOffset[]): void;
  /** Forgets partitions this member no longer owns; returns how many messages were in flight there. */
  retainOnly(partitions: readonly number[]): number;
  /** The newest high watermark seen for a partition (from a fetched batch). */
  sawHighWatermark(partition: number, highWatermark: string): void;
  /** Messages taken on and not settled, over every partition. */
  inFlight(): number;
  /** The first offset of `partition` not settled (one past the last taken when all have); null when none was taken. */
  lowWater(partition: number): bigint | null;
  /** Sum over partitions with a known high watermark of (high watermark − low-water mark); null when none is known. */
  lag(): number | null;
}

export function createOffsetTracker(): OffsetTracker {
  const partitions = new Map<number, PartitionState>();
  let inFlight = 0;

  const stateOf = (partition: number): PartitionState => {
    let state = partitions.get(partition);
    if (!state) {
      state = { entries: [], head: 0, byOffset: new Map(), next: -1n, committed: null, highWatermark: null };
      partitions.set(partition, state);
    }
    return state;
  };

  const lowWater = (state: PartitionState): bigint => (state.head < state.entries.length ? state.entries[state.head].offset : state.next);

  const trim = (state: PartitionState) => {
    const { entries } = state;
    while (state.head < entries.length && entries[state.head].settled) state.byOffset.delete(entries[state.head++].offset);
    if (state.head > 1024 && state.head * 2 > entries.length) {
      entries.splice(0, state.head);
      state.head = 0;
    }
  };

  const unsettled = (state: PartitionState) => state.entries.slice(state.head).filter((e) => !e.settled).length;

  return {
    isTaken(partition, offset) {
      const state = partitions.get(partition);
      return state !== undefined && BigInt(offset) < state.next;
    },
    take(partition, offset) {
      const state = stateOf(partition);
      const at = BigInt(offset);
      if (at < state.next) throw new Error(`partition ${partition}: offset ${offset} taken out of order (next is ${state.next})`);
      const entry = { offset: at, settled: false };
      state.entries.push(entry);
      state.byOffset.set(at, entry);
      state.next = at + 1n;
      inFlight++;
    },
    settle(partition, offset) {
      const state = partitions.get(partition);
      const entry = state?.byOffset.get(BigInt(offset));
      if (!state || !entry || entry.settled) return false;
      entry.settled = true;
      inFlight--;
      trim(state);
      return true;
    },
    due() {
      const out: PartitionOffset[] = [];
      for (const [partition, state] of partitions) {
        if (state.next < 0n) continue; // nothing taken on yet
        const mark = lowWater(state);
        if (state.committed === null || mark > state.committed) out.push({ partition, offset: mark.toString() });
      }
      return out;
    },
    committed(commits) {
      for (const { partition, offset } of commits) {
        const state = partitions.get(partition);
        const at = BigInt(offset);
        if (state && (state.committed === null || at > state.committed)) state.committed = at;
      }
    },
    retainOnly(kept) {
      const keep = new Set(kept);
      let dropped = 0;
      for (const [partition, state] of partitions) {
        if (keep.has(partition)) continue;
        dropped += unsettled(state);
        partitions.delete(partition);
      }
      inFlight -= dropped;
      return dropped;
    },
    sawHighWatermark(partition, highWatermark) {
      stateOf(partition).highWatermark = BigInt(highWatermark);
    },
    inFlight: () => inFlight,
    lowWater(partition) {
      const state = partitions.get(partition);
      return state && state.next >= 0n ? lowWater(state) : null;
    },
    lag() {
      let known = false;
      let sum = 0n;
      for (const state of partitions.values()) {
        if (state.highWatermark === null) continue;
        known = true;
        // Before anything was taken, what is committed is unknown here: count from the batch's start.
        const mark = state.next < 0n ? state.highWatermark : lowWater(state);
        if (state.highWatermark > mark) sum += state.highWatermark - mark;
      }
      return known ? Number(sum) : null;
    },
  };
}
