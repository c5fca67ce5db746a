import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaJSProtocolError, type Consumer, type EachMessagePayload, type Kafka, type KafkaMessage, type Message } from 'kafkajs';
import type { Logger } from 'pino';
import type { EventLog, LogHandler, LogProducer, SubscribeOptions } from '../../ports/event-log';
import type { StoredEvent, Subscription } from '../../ports/event-store';
import type { EventCodec } from './avro-codec';

/**
 * The distributed EventLog: one Kafka topic, keyed by `metadata.partition_key` so a project's
 * events stay in one partition and in order. Offsets are committed by hand, one message at a
 * time and only after its handler succeeded, so delivery is at least once and never skips.
 */

export type KafkaLogDeps = {
  readonly kafka: Kafka;
  readonly topic: string;
  readonly codec: EventCodec;
  readonly logger: Logger;
  /** First retry delay of a failing handler; doubles up to 30 s. */
  readonly retryBaseMs?: number;
};

// kafkajs throttles heartbeats to its `heartbeatInterval` (3 s by default) and only counts from
// the last answer, so ticking every second keeps the real cadence close to that interval.
const HEARTBEAT_TICK_MS = 1_000;
const RETRY_CAP_MS = 30_000;
// The group is moving partitions: the one in hand may now belong to another member.
const REBALANCING = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'NOT_COORDINATOR_FOR_GROUP', 'UNKNOWN_MEMBER_ID']);

const isRebalancing = (err: unknown): err is KafkaJSProtocolError => err instanceof KafkaJSProtocolError && REBALANCING.has(err.type);

// ---------------------------------------------------------------- heartbeats

type Heartbeat = { beat(): Promise<void>; readonly lost: Error | null };

/** A heartbeat that never throws (handlers call it freely) but remembers a lost assignment. */
function guardHeartbeat(heartbeat: () => Promise<void>, log: Logger): Heartbeat {
  let lost: Error | null = null;
  let warned = false;
  return {
    get lost() {
      return lost;
    },
    async beat() {
      try {
        await heartbeat();
      } catch (err) {
        if (isRebalancing(err)) lost ??= err;
        else if (!warned) {
          warned = true; // once per message: the interval would otherwise log every second
          log.warn({ err }, 'heartbeat failed');
        }
      }
    },
  };
}

async function withHeartbeats<T>(hb: Heartbeat, work: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => void hb.beat(), HEARTBEAT_TICK_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Waits out a retry delay while heartbeating. Throws when the partition was lost to a
 * rebalance (kafkajs then rejoins and the event is redelivered to its new owner) or when the
 * subscription closes: either way the event stays uncommitted.
 */
async function backOff(ms: number, hb: Heartbeat, signal: AbortSignal): Promise<void> {
  const until = Date.now() + ms;
  for (let left = ms; left > 0; left = until - Date.now()) {
    if (hb.lost) throw hb.lost;
    await sleep(Math.min(HEARTBEAT_TICK_MS, left), undefined, { signal });
    await hb.beat();
  }
  if (hb.lost) throw hb.lost;
}

// ---------------------------------------------------------------- consumer

const closingError = () => new Error('subscription closing: event left uncommitted for redelivery');

function decode(codec: EventCodec, message: KafkaMessage): StoredEvent {
  if (!message.value) throw new Error(`message at offset ${message.offset} has no value`);
  return codec.decode(message.value);
}

export function createKafkaEventLog(deps: KafkaLogDeps): EventLog {
  const subscriptions = new Set<Subscription>();
  const retryBaseMs = deps.retryBaseMs ?? 250;

  /** Handles one message until it succeeds, then commits the offset after it. */
  const deliver = async (consumer: Consumer, handler: LogHandler, log: Logger, signal: AbortSignal, payload: EachMessagePayload) => {
    const { topic, partition, message } = payload;
    const hb = guardHeartbeat(payload.heartbeat, log);
    let event: StoredEvent | null = null;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw closingError();
      try {
        // Decoding is retried too: an unknown schema usually means a newer producer is rolling out.
        event ??= decode(deps.codec, message);
        const current = event;
        await withHeartbeats(hb, () => handler(current, { heartbeat: () => hb.beat() }));
        break;
      } catch (err) {
        const delay = Math.min(RETRY_CAP_MS, retryBaseMs * 2 ** Math.min(attempt - 1, 16));
        const at = { partition, offset: message.offset, event_id: event?.id, type: event?.type };
        log.error({ err, ...at, attempt, retry_in_ms: delay }, 'handler failed; will retry');
        await backOff(delay, hb, signal).catch((e: unknown) => {
          throw signal.aborted ? closingError() : e;
        });
      }
    }
    // Kafka's committed offset is the next one to read. A commit refused because the group
    // moved on throws: kafkajs rejoins and the event is delivered again (handlers are idempotent).
    await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
  };

  async function subscribe(group: string, handler: LogHandler, options: SubscribeOptions = {}): Promise<Subscription> {
    const log = deps.logger.child({ group, topic: deps.topic });
    const consumer = deps.kafka.consumer({ groupId: group });
    const abort = new AbortController();
    consumer.on(consumer.events.CRASH, ({ payload }) => log.error({ err: payload.error, restart: payload.restart }, 'consumer crashed'));
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [deps.topic], fromBeginning: options.startAt !== 'latest' });
      await consumer.run({
        autoCommit: false,
        partitionsConsumedConcurrently: Math.max(1, options.concurrency ?? 4),
        eachMessage: (payload) => deliver(consumer, handler, log, abort.signal, payload),
      });
    } catch (err) {
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    const subscription: Subscription = {
      async close() {
        if (abort.signal.aborted) return;
        abort.abort();
        // disconnect() waits for the message in flight; an aborted retry ends it uncommitted.
        await consumer.disconnect();
        subscriptions.delete(subscription);
      },
    };
    subscriptions.add(subscription);
    log.info({ concurrency: options.concurrency ?? 4, start_at: options.startAt ?? 'earliest' }, 'subscribed');
    return subscription;
  }

  return {
    subscribe,
    async close() {
      await Promise.all([...subscriptions].map((s) => s.close()));
    },
  };
}

// ---------------------------------------------------------------- producer

/**
 * The relay's producer. Idempotent with one request in flight, so a retried send can neither
 * duplicate nor reorder within a partition; `acks: -1` waits for every in-sync replica. A send
 * that fails part-way may have written some partitions: the relay resends the whole batch and
 * consumers dedupe by event id.
 */
export function createKafkaProducer(deps: Omit<KafkaLogDeps, 'retryBaseMs'>): LogProducer {
  const producer = deps.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  let connected: Promise<void> | null = null;
  const connect = () =>
    (connected ??= producer.connect().catch((err: unknown) => {
      connected = null; // let the next publish try again
      throw err;
    }));

  const toMessage = (event: StoredEvent): Message => ({
    // partition_key is required metadata; the stream id keeps at least one stream ordered without it.
    key: String(event.metadata.partition_key || event.streamId),
    value: deps.codec.encode(event),
    headers: { 'event-type': event.type, 'event-id': event.id },
  });

  return {
    async publish(events) {
      if (events.length === 0) return;
      const messages = events.map(toMessage); // encode first: an invalid event sends nothing
      await connect();
      await producer.send({ topic: deps.topic, acks: -1, messages });
    },
    async close() {
      if (!connected) return;
      await connected.catch(() => undefined);
      connected = null;
      await producer.disconnect();
    },
  };
}

/** Creates `topic` with `partitions` partitions unless it exists (replication: broker default). */
export async function ensureTopic(kafka: Kafka, topic: string, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if ((await admin.listTopics()).includes(topic)) return;
    // Resolves false when another process created it meanwhile, which is just as good.
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}
