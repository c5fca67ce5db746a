import { KafkaJSProtocolError, type EachBatchPayload, type KafkaMessage, type Offsets } from 'kafkajs';
import type { Logger } from 'pino';
import { deliver, type Member } from './consumer-delivery';
import type { Lane, Pending } from './consumer-lanes';
import { markOf } from './marks';
import type { OffsetTracker } from './offsets';

/** Taking messages on from kafkajs's batches into the lanes, and committing what settled. */

// kafkajs throttles heartbeats to its `heartbeatInterval` (3 s by default) and only counts from
// the last answer, so ticking every second keeps the real cadence close to that interval.
const HEARTBEAT_TICK_MS = 1_000;
// The group is moving partitions: a commit now would be refused, and the new owner redelivers.
const REBALANCING = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'NOT_COORDINATOR_FOR_GROUP', 'UNKNOWN_MEMBER_ID']);
const isRebalancing = (err: unknown) => err instanceof KafkaJSProtocolError && REBALANCING.has(err.type);

type BatchControls = Pick<EachBatchPayload, 'heartbeat'> & { commit(offsets: Offsets): Promise<void> };

/** What the batch handler, the commits and the group's events share. */
export type GroupLink = {
  /** The latest batch's heartbeat and commit: kafkajs offers them only inside `eachBatch`. */
  controls: BatchControls | null;
  /** Set while the group moves partitions, when a commit would be refused. */
  rebalancing: boolean;
};

/** kafkajs's `eachBatch`: takes the batch's messages on into their partition's lane, and returns. */
export function takingOn(member: Member, link: GroupLink, maxInFlight: number) {
  const { lanes, signal } = member;
  return async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    link.controls = { heartbeat: payload.heartbeat, commit: (o) => payload.commitOffsetsIfNecessary(o) };
    const lane = lanes.laneOf(batch.partition);
    for (const message of batch.messages) {
      if (!payload.isRunning() || payload.isStale() || signal.aborted) break;
      // After a rejoin kafkajs fetches from the last commit again: what is in a lane already stays there.
      if (!lanes.offsets.isTaken(batch.partition, message.offset)) {
        if (!(await room(member, payload, maxInFlight)) || lane.dropped) break;
        takeOn(member, lane, message);
      }
      // Resolving only moves kafkajs's fetch position; the commit is ours.
      payload.resolveOffset(message.offset);
    }
    lanes.offsets.sawHighWatermark(batch.partition, batch.highWatermark);
  };
}

/** Queues a message in its lane: an event for delivery, a mark to be settled in its turn. */
function takeOn(member: Member, lane: Lane, message: KafkaMessage): void {
  const { lanes } = member;
  lanes.offsets.take(lane.partition, message.offset);
  const p: Pending = { lane, message, event: null };
  const mark = markOf(message.headers);
  if (mark) {
    // No handler: settled in its lane's turn, reached once everything before it has settled.
    lanes.seenMark(lane.partition, message.offset, mark);
    lane.tail = lane.tail.then(() => lanes.settle(p));
  } else lane.tail = lane.tail.then(() => deliver(member, p));
}

/** Waits while `maxInFlight` messages are unsettled, heartbeating; false when consuming stops. */
async function room(member: Member, payload: EachBatchPayload, maxInFlight: number): Promise<boolean> {
  const { lanes, signal } = member;
  while (lanes.offsets.inFlight() >= maxInFlight) {
    if (!payload.isRunning() || signal.aborted) return false;
    await lanes.changed(HEARTBEAT_TICK_MS);
    await payload.heartbeat(); // a rebalance error propagates: kafkajs then rejoins the group
  }
  return !signal.aborted;
}

export type Commits = ReturnType<typeof committing>;

/**
 * Commits each partition's low-water mark of settled messages, one commit at a time, after
 * `beforeCommit` made what the handlers wrote up to them durable (`SubscribeOptions.beforeCheckpoint`).
 */
export function committing(topic: string, link: GroupLink, offsets: OffsetTracker, log: Logger, beforeCommit?: () => Promise<void>) {
  let inProgress: Promise<void> | null = null;
  const commitDue = async () => {
    const due = offsets.due();
    if (!link.controls || link.rebalancing || due.length === 0) return;
    try {
      await beforeCommit?.();
      await link.controls.commit({ topics: [{ topic, partitions: due }] });
      offsets.committed(due);
    } catch (err) {
      // Refused because the group moved on: the next owner starts from the last accepted commit.
      if (isRebalancing(err)) log.debug({ err }, 'offset commit refused during a rebalance');
      else log.warn({ err }, 'offset commit failed; will retry');
    }
  };
  return {
    commit: (): Promise<void> => (inProgress ??= commitDue().finally(() => (inProgress = null))),
    /** The commit in progress, if any. */
    inProgress: () => inProgress,
  };
}
