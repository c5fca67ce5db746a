/**
 * Store positions through Kafka (read-your-writes, docs/decisions.md). Partitions move on
 * independently, so a consumer cannot tell from its offsets how far it has handled the event
 * store. The relay says it: after each batch it has published up to store position P, it writes a
 * **mark** `{position: P}` into every partition of the topic. A mark is behind every event of P
 * or before in its partition, so once a member has settled everything before a mark, it has
 * handled all of that partition's events up to P. The member's watermark is the least of its
 * partitions' last reached marks, known once it holds a mark of every partition (it owns them
 * all: the all-in-one worker's projector). Pure and synchronous, so the rules are tested without
 * a broker.
 */

/** Headers of a mark message (it has no value; consumers hand it to no handler). */
export const MARK_HEADER = 'mps-mark';
export const MARK_PARTITIONS_HEADER = 'mps-mark-partitions';

export type Mark = { readonly position: string; readonly partitions: number };

/** A mark, if the message's headers make it one. */
export function markOf(headers: Readonly<Record<string, unknown>> | undefined): Mark | null {
  const position = headers?.[MARK_HEADER];
  const partitions = headers?.[MARK_PARTITIONS_HEADER];
  if (position === undefined || partitions === undefined) return null;
  return { position: String(position), partitions: Number(String(partitions)) };
}

export interface MarkTracker {
  /** A mark taken on at `offset` of `partition`. */
  seen(partition: number, offset: bigint, mark: Mark): void;
  /**
   * The partition's low-water mark moved to `lowWater` (the first offset not settled): marks before
   * it are reached. Returns the partition's reached position when it rose, else null.
   */
  settledBelow(partition: number, lowWater: bigint): bigint | null;
  /** How many partitions the topic has, as the marks say (0 before the first mark). */
  partitions(): number;
  /** Each partition's reached position so far. */
  reached(): ReadonlyMap<number, bigint>;
  /** Forgets partitions this member lost (what it reached there stays true, but no longer moves). */
  retainOnly(partitions: readonly number[]): void;
  /** The least reached position over every partition of the topic; null until each has one. */
  watermark(): bigint | null;
}

export function createMarkTracker(positionValue: (position: string) => bigint): MarkTracker {
  const pending = new Map<number, { offset: bigint; position: bigint }[]>();
  const reached = new Map<number, bigint>();
  let partitions = 0;
  return {
    seen(partition, offset, mark) {
      partitions = Math.max(partitions, mark.partitions);
      const list = pending.get(partition) ?? [];
      list.push({ offset, position: positionValue(mark.position) });
      pending.set(partition, list);
    },
    settledBelow(partition, lowWater) {
      const list = pending.get(partition);
      let rose: bigint | null = null;
      while (list && list.length > 0 && list[0].offset < lowWater) {
        const { position } = list.shift()!;
        if ((reached.get(partition) ?? -1n) < position) reached.set(partition, (rose = position));
      }
      return rose;
    },
    partitions: () => partitions,
    reached: () => reached,
    retainOnly(kept) {
      const keep = new Set(kept);
      for (const partition of pending.keys()) if (!keep.has(partition)) pending.delete(partition);
    },
    watermark() {
      if (partitions === 0) return null;
      let least: bigint | null = null;
      for (let p = 0; p < partitions; p++) {
        const at = reached.get(p);
        if (at === undefined) return null;
        if (least === null || at < least) least = at;
      }
      return least;
    },
  };
}
