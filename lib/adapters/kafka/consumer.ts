import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { DeadLetterStore } from '../../ports/dead-letters';
import type { LogHandler, LogSubscription, SubscribeOptions } from '../../ports/event-log';
import type { EventCodec } from './avro-codec';
import { committing, takingOn, type Commits, type GroupLink } from './consumer-batches';
import { offLane, retryingLetters, semaphore, type Member } from './consumer-delivery';
import { createLanes, type Lanes } from './consumer-lanes';

/**
 * One member of a consumer group. kafkajs fetches a partition again only once the previous batch
 * was handled, so the batch handler only takes messages on: each partition has a lane that hands
 * its messages to the handler one after the other, while kafkajs keeps fetching (and
 * heartbeating) behind it. A handler that returns `{ settled }` frees its lane at once. Offsets
 * are committed by hand, per partition, at the low-water mark of settled messages (offsets.ts),
 * so a crash redelivers only what had not settled: delivery is at least once.
 *
 * Here the member is wired and its life cycle kept; consumer-lanes.ts holds the lanes, offsets
 * and marks, consumer-delivery.ts a delivery with its retries and dead letter, and
 * consumer-batches.ts the batch handler and the commits.
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
  /** The group's wait for a silent member before its partitions move (kafkajs: 30 s). */
  readonly sessionTimeoutMs?: number;
};

const RETRY_CAP_MS = 30_000;

/** A session timeout and a heartbeat three times as often (Kafka's advice), kafkajs's 3 s at most. */
const sessionTiming = (sessionTimeoutMs: number | undefined) =>
  sessionTimeoutMs === undefined
    ? {}
    : { sessionTimeout: sessionTimeoutMs, heartbeatInterval: Math.min(3000, Math.floor(sessionTimeoutMs / 3)) };

export async function subscribeKafka(
  deps: KafkaConsumerDeps,
  group: string,
  handler: LogHandler,
  options: SubscribeOptions = {},
): Promise<LogSubscription> {
  const abort = new AbortController();
  const link: GroupLink = { controls: null, rebalancing: false };
  const member = memberOf(deps, group, handler, options, abort.signal, link);
  const consumer = deps.kafka.consumer({ groupId: group, ...sessionTiming(deps.sessionTimeoutMs) });
  const life = { running: true };
  onGroupEvents(consumer, deps.topic, link, member, (err) => {
    if (!life.running) return;
    life.running = false;
    member.log.fatal({ err }, 'consumer crashed for good; this member no longer consumes');
    options.onFatal?.(err);
  });
  await run(consumer, deps.topic, options, takingOn(member, link, Math.max(1, options.maxInFlight ?? 512)));
  const commits = committing(deps.topic, link, member.lanes.offsets, member.log, options.beforeCheckpoint);
  const retryLetters = retryingLetters(member);
  const timers = [
    setInterval(() => void commits.commit(), deps.commitIntervalMs ?? 1_000),
    setInterval(() => void retryLetters(), deps.retryPollMs ?? 2_000),
  ];
  member.log.info(
    { concurrency: options.concurrency ?? 4, max_attempts: member.maxAttempts, start_at: options.startAt ?? 'earliest' },
    'subscribed',
  );
  return subscriptionOf(member, life, () => leave({ member, consumer, abort, commits, timers, life }));
}

/** Handler calls in progress finish; pending `settled`s are left uncommitted for redelivery. */
async function leave(parts: {
  member: Member;
  consumer: Consumer;
  abort: AbortController;
  commits: Commits;
  timers: NodeJS.Timeout[];
  life: { running: boolean };
}): Promise<void> {
  const { member, commits } = parts;
  parts.abort.abort();
  member.lanes.wake();
  parts.timers.forEach(clearInterval);
  await member.lanes.drained();
  await member.offLane.drained();
  await commits.inProgress();
  await commits.commit();
  parts.life.running = false;
  await parts.consumer.disconnect();
}

/** What delivering this member's messages needs; a failing handler is retried after `retryBaseMs`, doubling up to 30 s. */
function memberOf(
  deps: KafkaConsumerDeps,
  group: string,
  handler: LogHandler,
  options: SubscribeOptions,
  signal: AbortSignal,
  link: GroupLink,
): Member {
  const log = deps.logger.child({ group, topic: deps.topic });
  const retryBaseMs = deps.retryBaseMs ?? 250;
  return {
    group,
    handler,
    codec: deps.codec,
    deadLetters: deps.deadLetters,
    log,
    signal,
    maxAttempts: Math.max(1, options.maxAttempts ?? 5),
    delayOf: (attempt) => Math.min(RETRY_CAP_MS, retryBaseMs * 2 ** Math.min(attempt - 1, 16)),
    withSlot: semaphore(Math.max(1, options.concurrency ?? 4)),
    context: {
      async heartbeat() {
        // kafkajs's own fetch loop notices a rebalance; a handler must not fail because of one.
        await link.controls?.heartbeat().catch(() => undefined);
      },
    },
    lanes: createLanes(),
    offLane: offLane(log),
  };
}

/** Partitions come and go with the group's rounds; a crash kafkajs does not restart from is fatal. */
function onGroupEvents(
  consumer: Consumer,
  topic: string,
  link: GroupLink,
  { lanes, log }: { lanes: Lanes; log: Logger },
  fail: (err: Error) => void,
): void {
  consumer.on(consumer.events.REBALANCING, () => (link.rebalancing = true));
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    link.rebalancing = false;
    const assigned = payload.memberAssignment[topic] ?? [];
    const dropped = lanes.keepOnly(assigned);
    log.info({ partitions: assigned, dropped_in_flight: dropped }, 'partitions assigned');
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    lanes.keepOnly([]); // it left the group: the next owner of every partition redelivers
    log.error({ err: payload.error, restart: payload.restart }, 'consumer crashed');
    if (!payload.restart) fail(payload.error);
  });
}

/** Joins the group and starts fetching; offsets are never committed by kafkajs itself. */
async function run(
  consumer: Consumer,
  topic: string,
  options: SubscribeOptions,
  eachBatch: (payload: EachBatchPayload) => Promise<void>,
): Promise<void> {
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: options.startAt !== 'latest' });
    await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
  } catch (err) {
    await consumer.disconnect().catch(() => undefined);
    throw err;
  }
}

function subscriptionOf(member: Member, life: { running: boolean }, stop: () => Promise<void>): LogSubscription {
  let closed: Promise<void> | null = null;
  return {
    close: () =>
      (closed ??= (async () => {
        await stop();
        member.log.info('unsubscribed');
      })()),
    status: () => ({ group: member.group, running: life.running, lag: member.lanes.offsets.lag() }),
    onWatermark: member.lanes.onWatermark,
    onPartitionMark: member.lanes.onPartitionMark,
  };
}
