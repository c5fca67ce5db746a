import type { Kafka, Message } from 'kafkajs';
import type { Logger } from 'pino';
import { AppError } from '../../domain/errors';
import type { LogProducer } from '../../ports/event-log';
import type { StoredEvent } from '../../ports/event-store';
import type { EventCodec } from './avro-codec';
import { MARK_HEADER, MARK_PARTITIONS_HEADER } from './marks';

export type KafkaProducerDeps = {
  readonly kafka: Kafka;
  readonly topic: string;
  readonly codec: EventCodec;
  readonly logger: Logger;
  /**
   * Largest message (key, value and headers) sent, and largest send: kept under the broker's
   * `message.max.bytes` (1 MiB by default) so the broker never refuses a whole batch.
   */
  readonly maxMessageBytes?: number;
};

const DEFAULT_MAX_MESSAGE_BYTES = 1_000_000;
// The broker refuses these whatever the retries; kafkajs may wrap them in a retry error.
const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

function isTooLarge(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (TOO_LARGE.has((e as { type?: string }).type ?? '')) return true;
  }
  return false;
}

/**
 * An event the log will never take, however often it is sent (no schema, does not fit it, too
 * large). Not retriable: the relay sets the event aside as a dead letter instead of stopping.
 */
export const unpublishable = (message: string) => new AppError('unprocessable_entity', message, { retriable: false });

type Outgoing = { readonly event: StoredEvent; readonly message: Message; readonly bytes: number };

const sizeOf = (m: Message): number =>
  Buffer.byteLength(String(m.key ?? '')) +
  (m.value as Buffer).length +
  Object.entries(m.headers ?? {}).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(String(v)), 0);

/** Consecutive runs of messages whose sizes add up to at most `max`, in order. */
function chunks(all: readonly Outgoing[], max: number): Outgoing[][] {
  const out: Outgoing[][] = [];
  let current: Outgoing[] = [];
  let bytes = 0;
  for (const o of all) {
    if (current.length > 0 && bytes + o.bytes > max) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(o);
    bytes += o.bytes;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * The relay's producer. Idempotent with one request in flight, so a retried send can neither
 * duplicate nor reorder within a partition; `acks: -1` waits for every in-sync replica. A
 * publish is all or nothing for its caller: events that can never be sent make it throw an
 * `unpublishable` error before anything is sent, and the relay then publishes the batch one
 * event at a time to set the bad one aside. A send that fails part-way may have written some
 * messages: the relay resends the whole batch and consumers dedupe by event id.
 */
export function createKafkaProducer(deps: KafkaProducerDeps): LogProducer {
  const maxBytes = deps.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const producer = deps.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  let connected: Promise<void> | null = null;
  const connect = () =>
    (connected ??= producer.connect().catch((err: unknown) => {
      connected = null; // let the next publish try again
      throw err;
    }));

  function outgoing(event: StoredEvent): Outgoing {
    let value: Buffer;
    try {
      value = deps.codec.encode(event);
    } catch (err) {
      throw unpublishable(`event ${event.type} ${event.id} cannot be encoded: ${err instanceof Error ? err.message : String(err)}`);
    }
    const message: Message = {
      // partition_key is required metadata; the stream id keeps at least one stream ordered without it.
      key: String(event.metadata.partition_key || event.streamId),
      value,
      headers: { 'event-type': event.type, 'event-id': event.id },
    };
    const bytes = sizeOf(message);
    if (bytes > maxBytes) throw unpublishable(`event ${event.type} ${event.id} is ${bytes} bytes, over the ${maxBytes}-byte message limit`);
    return { event, message, bytes };
  }

  // The topic's partition count, asked once (a mark goes to each partition).
  let partitions: Promise<number> | null = null;
  const partitionCount = () =>
    (partitions ??= (async () => {
      const admin = deps.kafka.admin();
      await admin.connect();
      try {
        const { topics } = await admin.fetchTopicMetadata({ topics: [deps.topic] });
        return topics[0]?.partitions.length ?? 0;
      } finally {
        await admin.disconnect();
      }
    })().catch((err: unknown) => {
      partitions = null;
      throw err;
    }));

  return {
    async publishMark(position) {
      const n = await partitionCount();
      if (n === 0) return;
      await connect();
      const headers = { [MARK_HEADER]: position, [MARK_PARTITIONS_HEADER]: String(n) };
      const messages = Array.from({ length: n }, (_, partition) => ({ partition, key: null, value: null, headers }));
      await producer.send({ topic: deps.topic, acks: -1, messages });
    },
    async publish(events) {
      if (events.length === 0) return;
      const all = events.map(outgoing);
      await connect();
      for (const chunk of chunks(all, maxBytes)) {
        try {
          await producer.send({ topic: deps.topic, acks: -1, messages: chunk.map((o) => o.message) });
        } catch (err) {
          if (!isTooLarge(err)) throw err;
          const what = chunk.length === 1 ? `event ${chunk[0].event.type} ${chunk[0].event.id}` : `a batch of ${chunk.length} events`;
          throw unpublishable(`the broker refused ${what} as too large (message.max.bytes)`);
        }
      }
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
