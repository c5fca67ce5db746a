import type { KafkaMessage } from 'kafkajs';
import type { PartitionMark } from '../../ports/event-log';
import { positionValue, type StoredEvent } from '../../ports/event-store';
import { createMarkTracker, type Mark } from './marks';
import { createOffsetTracker, type OffsetTracker } from './offsets';

/**
 * What one member of the Kafka consumer group holds of its partitions: a lane each that hands
 * the partition's messages on one after the other, the offsets taken on and settled (offsets.ts),
 * and the relay's marks (marks.ts), reached as the partition's low-water mark passes them.
 */

export type Lane = { readonly partition: number; tail: Promise<void>; dropped: boolean };
export type Pending = { readonly lane: Lane; readonly message: KafkaMessage; event: StoredEvent | null };
export type Lanes = ReturnType<typeof createLanes>;

export function createLanes() {
  const offsets = createOffsetTracker();
  const watermark = createWatermark(offsets);
  const lanes = new Map<number, Lane>();
  const changed = new Set<() => void>();
  return {
    offsets,
    onWatermark: watermark.listen,
    onPartitionMark: watermark.listenPerPartition,
    laneOf(partition: number): Lane {
      let lane = lanes.get(partition);
      if (!lane) lanes.set(partition, (lane = { partition, tail: Promise.resolve(), dropped: false }));
      return lane;
    },
    /** A mark taken on at `offset`: reached once everything before it in its partition has settled. */
    seenMark: (partition: number, offset: string, mark: Mark) => watermark.marks.seen(partition, BigInt(offset), mark),
    settle(p: Pending) {
      if (!p.lane.dropped && offsets.settle(p.lane.partition, p.message.offset)) watermark.reach(p.lane.partition);
      wakeAll(changed);
    },
    /** Forgets partitions this member lost: their messages are not committed here, the new owner redelivers them. */
    keepOnly(partitions: readonly number[]): number {
      for (const [partition, lane] of lanes) {
        if (partitions.includes(partition)) continue;
        lane.dropped = true;
        lanes.delete(partition);
      }
      const dropped = offsets.retainOnly(partitions);
      watermark.marks.retainOnly(partitions);
      wakeAll(changed);
      return dropped;
    },
    /** Resolves once a message settled or lanes were dropped, or after `ms` at the latest. */
    changed: (ms: number) =>
      new Promise<void>((resolve) => {
        const woken = () => (clearTimeout(timer), resolve());
        const timer = setTimeout(() => (changed.delete(woken), resolve()), ms);
        changed.add(woken);
      }),
    /** Wakes the batch handler waiting for room under `maxInFlight`. */
    wake: () => wakeAll(changed),
    /** Resolves once every lane has handed on what it holds. */
    drained: () => Promise.all([...lanes.values()].map((lane) => lane.tail)),
  };
}

function wakeAll(waiters: Set<() => void>): void {
  const woken = [...waiters];
  waiters.clear();
  woken.forEach((resolve) => resolve());
}

/**
 * The member's watermark: the marks a partition reached as it settles; listeners hear each rise,
 * of the member's own watermark (it owns every partition) or of any one partition's mark (a member
 * of several, which records them where the others can read them: lib/app/shared-consistency.ts).
 */
function createWatermark(offsets: OffsetTracker) {
  const marks = createMarkTracker(positionValue);
  const listeners: ((position: bigint) => void)[] = [];
  const perPartition: ((reached: PartitionMark) => void)[] = [];
  let watermark: bigint | null = null;
  return {
    marks,
    /** After a settle in `partition`: the marks below its low-water mark are reached. */
    reach(partition: number) {
      const lowWater = offsets.lowWater(partition);
      if (lowWater === null) return;
      const rose = marks.settledBelow(partition, lowWater);
      if (rose !== null) for (const listener of perPartition) listener({ partition, position: rose, partitions: marks.partitions() });
      const now = marks.watermark();
      if (now === null || (watermark !== null && now <= watermark)) return;
      watermark = now;
      for (const listener of listeners) listener(now);
    },
    listen(listener: (position: bigint) => void) {
      listeners.push(listener);
      if (watermark !== null) listener(watermark);
    },
    listenPerPartition(listener: (reached: PartitionMark) => void) {
      perPartition.push(listener);
      for (const [partition, position] of marks.reached()) listener({ partition, position, partitions: marks.partitions() });
    },
  };
}
