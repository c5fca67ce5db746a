import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaJSProtocolError, type EachBatchPayload, type Kafka, type KafkaMessage, type Offsets } from 'kafkajs';
import type { Logger } from 'pino';
import type { DeadLetterStore } from '../../ports/dead-letters';
import type { DeliveryContext, HandlerOutcome, LogHandler, LogSubscription, SubscribeOptions } from '../../ports/event-log';
import { positionValue, type StoredEvent } from '../../ports/event-store';
import type { EventCodec } from './avro-codec';
import { eventLetter, putUntilStored, rawLetter, reasonOf, retryDueLetters } from './letters';
import { createMarkTracker, markOf } from './marks';
import { createOffsetTracker } from './offsets';

/**
 * One member of a consumer group. kafkajs fetches a partition again only once the previous batch
 * was handled, so the batch handler only takes messages on: each partition has a lane that hands
 * its messages to the handler one after the other, while kafkajs keeps fetching (and
 * heartbeating) behind it. A handler that returns `{ settled }` frees its lane at once. Offsets
 * are committed by hand, per partition, at the low-water mark of settled messages (offsets.ts),
 * so a crash redelivers only what had not settled: delivery is at least once.
 */

export type KafkaConsumerDeps = {
  readonly kafka: Kafka;
  readonly topic: string;
  readonly codec: EventCodec;
  readonly logger: Logger;
  readonly deadLetters: DeadLetterStore;
  /** First retry delay of a failing handler; doubles up to 30 s. */
  readonly retryBaseMs?: number;
  /** How often letters an operator marked for retry are looked for. */
  readonly retryPollMs?: number;
  /** How often settled offsets are committed. */
  readonly commitIntervalMs?: number;
};

// kafkajs throttles heartbeats to its `heartbeatInterval` (3 s by default) and only counts from
// the last answer, so ticking every second keeps the real cadence close to that interval.
const HEARTBEAT_TICK_MS = 1_000;
const RETRY_CAP_MS = 30_000;
// The group is moving partitions: a commit now would be refused, and the new owner redelivers.
const REBALANCING = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'NOT_COORDINATOR_FOR_GROUP', 'UNKNOWN_MEMBER_ID']);
const isRebalancing = (err: unknown) => err instanceof KafkaJSProtocolError && REBALANCING.has(err.type);

type Lane = { readonly partition: number; tail: Promise<void>; dropped: boolean };
type Pending = { readonly lane: Lane; readonly message: KafkaMessage; event: StoredEvent | null };
type BatchControls = Pick<EachBatchPayload, 'heartbeat'> & { commit(offsets: Offsets): Promise<void> };

const isDeferred = (outcome: HandlerOutcome): outcome is { readonly settled: Promise<void> } =>
  typeof outcome === 'object' && outcome !== null && 'settled' in outcome;

function decode(codec: EventCodec, message: KafkaMessage): StoredEvent {
  if (!message.value) throw new Error(`message at offset ${message.offset} has no value`);
  return codec.decode(message.value);
}

/** At most `n` handler calls at once (the `concurrency` option), whatever the partition. */
function semaphore(n: number) {
  let free = n;
  const waiting: (() => void)[] = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    while (free === 0) await new Promise<void>((resolve) => waiting.push(resolve));
    free--;
    try {
      return await work();
    } finally {
      free++;
      waiting.shift()?.();
    }
  };
}

export async function subscribeKafka(
  deps: KafkaConsumerDeps,
  group: string,
  handler: LogHandler,
  options: SubscribeOptions = {},
): Promise<LogSubscription> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5);
  const maxInFlight = Math.max(1, options.maxInFlight ?? 512);
  const withSlot = semaphore(Math.max(1, options.concurrency ?? 4));
  const log = deps.logger.child({ group, topic: deps.topic });
  const consumer = deps.kafka.consumer({ groupId: group });
  const offsets = createOffsetTracker();
  // The relay's marks: how far this member has handled the event store (marks.ts).
  const marks = createMarkTracker(positionValue);
  const watermarkListeners: ((position: bigint) => void)[] = [];
  let watermark: bigint | null = null;
  const reachMarks = (partition: number) => {
    const lowWater = offsets.lowWater(partition);
    if (lowWater === null) return;
    marks.settledBelow(partition, lowWater);
    const now = marks.watermark();
    if (now === null || (watermark !== null && now <= watermark)) return;
    watermark = now;
    for (const listener of watermarkListeners) listener(now);
  };
  const lanes = new Map<number, Lane>();
  const detached = new Set<Promise<void>>();
  const abort = new AbortController();
  const { signal } = abort;
  let running = true;
  let rebalancing = false;
  let controls: BatchControls | null = null;
  const changed = new Set<() => void>();
  const delayOf = (attempt: number) => Math.min(RETRY_CAP_MS, (deps.retryBaseMs ?? 250) * 2 ** Math.min(attempt - 1, 16));

  /** Wakes the batch handler waiting for room under `maxInFlight`. */
  const wake = () => {
    const waiters = [...changed];
    changed.clear();
    waiters.forEach((resolve) => resolve());
  };

  const context: DeliveryContext = {
    async heartbeat() {
      // kafkajs's own fetch loop notices a rebalance; a handler must not fail because of one.
      await controls?.heartbeat().catch(() => undefined);
    },
  };

  // ---------------------------------------------------------------- lanes

  /** Forgets partitions this member lost: their messages are not committed here, the new owner redelivers them. */
  const keepOnly = (partitions: readonly number[]) => {
    for (const [partition, lane] of lanes) {
      if (partitions.includes(partition)) continue;
      lane.dropped = true;
      lanes.delete(partition);
    }
    const dropped = offsets.retainOnly(partitions);
    marks.retainOnly(partitions);
    wake();
    return dropped;
  };

  const laneOf = (partition: number): Lane => {
    let lane = lanes.get(partition);
    if (!lane) lanes.set(partition, (lane = { partition, tail: Promise.resolve(), dropped: false }));
    return lane;
  };

  const abandoned = (p: Pending) => p.lane.dropped || signal.aborted;
  const where = (p: Pending) => ({ partition: p.lane.partition, offset: p.message.offset, event_id: p.event?.id, type: p.event?.type });

  const settle = (p: Pending) => {
    if (!p.lane.dropped && offsets.settle(p.lane.partition, p.message.offset)) reachMarks(p.lane.partition);
    wake();
  };

  const deadLetter = async (p: Pending, err: unknown, attempts: number) => {
    const reason = reasonOf(err);
    const letter = p.event
      ? eventLetter(group, p.event, reason, attempts)
      : rawLetter(group, p.lane.partition, p.message, reason, attempts);
    log.error({ err, ...where(p), attempts }, p.event ? 'event dead-lettered' : 'undecodable message dead-lettered');
    if (await putUntilStored(deps.deadLetters, letter, { log, signal, delayOf, gone: () => p.lane.dropped })) settle(p);
  };

  /** After a failed try: waits the back-off and says whether to try again, or dead-letters the message. */
  const again = async (p: Pending, attempt: number, err: unknown): Promise<boolean> => {
    if (abandoned(p)) return false;
    if (attempt >= maxAttempts) {
      await deadLetter(p, err, attempt);
      return false;
    }
    const delay = delayOf(attempt);
    log.warn(
      { err, ...where(p), attempt, retry_in_ms: delay },
      p.event ? 'handler failed; will retry' : 'message not decodable; will retry',
    );
    await sleep(delay, undefined, { signal }).catch(() => undefined);
    return !abandoned(p);
  };

  /**
   * Tries a message from `first` on. Resolves when its lane may go on: the handler returned, it
   * was dead-lettered, or it was abandoned (partition lost, closing: it stays uncommitted). A
   * `settled` that rejects is retried off the lane, so the partition's later messages go on.
   */
  async function deliver(p: Pending, first = 1): Promise<void> {
    for (let attempt = first; !abandoned(p); attempt++) {
      let failure: unknown;
      try {
        const event = (p.event ??= decode(deps.codec, p.message));
        const outcome = await withSlot(async () => (abandoned(p) ? null : { value: await handler(event, context) }));
        if (!outcome) return;
        if (isDeferred(outcome.value)) {
          outcome.value.settled.then(
            () => settle(p),
            (err: unknown) => track(again(p, attempt, err).then((retry) => (retry ? deliver(p, attempt + 1) : undefined))),
          );
        } else settle(p);
        return;
      } catch (err) {
        failure = err;
      }
      if (!(await again(p, attempt, failure))) return;
    }
  }

  /** Keeps retries that run off their lane, so that close waits for the try in progress. */
  const track = (work: Promise<void>) => {
    const guarded = work.catch((err: unknown) => log.error({ err }, 'retry off the lane failed'));
    detached.add(guarded);
    void guarded.finally(() => detached.delete(guarded));
  };

  // ---------------------------------------------------------------- fetching and committing

  /** Waits while `maxInFlight` messages are unsettled, heartbeating; false when consuming stops. */
  async function room(payload: EachBatchPayload): Promise<boolean> {
    while (offsets.inFlight() >= maxInFlight) {
      if (!payload.isRunning() || signal.aborted) return false;
      await new Promise<void>((resolve) => {
        const woken = () => (clearTimeout(timer), resolve());
        const timer = setTimeout(() => (changed.delete(woken), resolve()), HEARTBEAT_TICK_MS);
        changed.add(woken);
      });
      await payload.heartbeat(); // a rebalance error propagates: kafkajs then rejoins the group
    }
    return !signal.aborted;
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    controls = { heartbeat: payload.heartbeat, commit: (o) => payload.commitOffsetsIfNecessary(o) };
    const lane = laneOf(batch.partition);
    for (const message of batch.messages) {
      if (!payload.isRunning() || payload.isStale() || signal.aborted) break;
      // After a rejoin kafkajs fetches from the last commit again: what is in a lane already stays there.
      if (!offsets.isTaken(batch.partition, message.offset)) {
        if (!(await room(payload)) || lane.dropped) break;
        offsets.take(batch.partition, message.offset);
        const p: Pending = { lane, message, event: null };
        const mark = markOf(message.headers);
        if (mark) {
          // No handler: settled in its lane's turn, reached once everything before it has settled.
          marks.seen(batch.partition, BigInt(message.offset), mark);
          lane.tail = lane.tail.then(() => settle(p));
        } else lane.tail = lane.tail.then(() => deliver(p));
      }
      // Resolving only moves kafkajs's fetch position; the commit is ours.
      payload.resolveOffset(message.offset);
    }
    offsets.sawHighWatermark(batch.partition, batch.highWatermark);
  }

  let committing: Promise<void> | null = null;
  const commit = (): Promise<void> =>
    (committing ??= (async () => {
      const due = offsets.due();
      if (!controls || rebalancing || due.length === 0) return;
      try {
        await controls.commit({ topics: [{ topic: deps.topic, partitions: due }] });
        offsets.committed(due);
      } catch (err) {
        // Refused because the group moved on: the next owner starts from the last accepted commit.
        if (isRebalancing(err)) log.debug({ err }, 'offset commit refused during a rebalance');
        else log.warn({ err }, 'offset commit failed; will retry');
      }
    })().finally(() => (committing = null)));

  // ---------------------------------------------------------------- operator retries

  let retrying: Promise<void> | null = null;
  const retryLetters = () =>
    (retrying ??= retryDueLetters({
      store: deps.deadLetters,
      source: group,
      codec: deps.codec,
      log,
      signal,
      async handle(event) {
        const outcome = await withSlot(() => handler(event, context));
        if (isDeferred(outcome)) await outcome.settled;
      },
    }).finally(() => (retrying = null)));

  // ---------------------------------------------------------------- life cycle

  const fail = (err: Error) => {
    if (!running) return;
    running = false;
    log.fatal({ err }, 'consumer crashed for good; this member no longer consumes');
    options.onFatal?.(err);
  };

  consumer.on(consumer.events.REBALANCING, () => (rebalancing = true));
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    rebalancing = false;
    const assigned = payload.memberAssignment[deps.topic] ?? [];
    const dropped = keepOnly(assigned);
    log.info({ partitions: assigned, dropped_in_flight: dropped }, 'partitions assigned');
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    keepOnly([]); // it left the group: the next owner of every partition redelivers
    log.error({ err: payload.error, restart: payload.restart }, 'consumer crashed');
    if (!payload.restart) fail(payload.error);
  });

  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [deps.topic], fromBeginning: options.startAt !== 'latest' });
    await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
  } catch (err) {
    await consumer.disconnect().catch(() => undefined);
    throw err;
  }
  const commitTimer = setInterval(() => void commit(), deps.commitIntervalMs ?? 1_000);
  const retryTimer = setInterval(() => void retryLetters(), deps.retryPollMs ?? 2_000);
  log.info({ concurrency: options.concurrency ?? 4, max_attempts: maxAttempts, start_at: options.startAt ?? 'earliest' }, 'subscribed');

  let closed: Promise<void> | null = null;
  return {
    close: () =>
      (closed ??= (async () => {
        abort.abort();
        wake();
        clearInterval(commitTimer);
        clearInterval(retryTimer);
        // Handler calls in progress finish; pending `settled`s are left uncommitted for redelivery.
        await Promise.all([...lanes.values()].map((lane) => lane.tail));
        await Promise.all([...detached]);
        await committing;
        await commit();
        running = false;
        await consumer.disconnect();
        log.info('unsubscribed');
      })()),
    status: () => ({ group, running, lag: offsets.lag() }),
    onWatermark(listener) {
      watermarkListeners.push(listener);
      if (watermark !== null) listener(watermark);
    },
  };
}
