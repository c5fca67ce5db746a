import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { MongoClient } from 'mongodb';
import pino from 'pino';
import { createSqliteDeadLetterStore } from '../../lib/adapters/embedded/dead-letters';
import { createEmbeddedEventLog } from '../../lib/adapters/embedded/event-log';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createKafkaEventLog, createKafkaProducer, ensureTopic } from '../../lib/adapters/kafka/event-log';
import { createMongoDeadLetterStore } from '../../lib/adapters/mongodb/dead-letters';
import type { DeadLetterStore } from '../../lib/ports/dead-letters';
import type { StoredEvent } from '../../lib/ports/event-store';
import { createMemoryDeadLetterStore } from '../fixtures/memory-dead-letters';
import { kafkaSuite } from '../fixtures/kafka';
import { waitFor } from '../fixtures/wait';
import { describeEventLogContract } from './event-log.contract';

const logger = pino({ level: 'silent' });

describeEventLogContract('embedded ($all of the SQLite store)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'log-'));
  const path = join(dir, 'events.sqlite');
  const store = createSqliteEventStore({ path });
  const deadLetters = createSqliteDeadLetterStore({ path });
  const log = createEmbeddedEventLog({ store, logger, deadLetters, retryBaseMs: 5, retryPollMs: 50 });
  return {
    log,
    deadLetters,
    async produce(key, types) {
      const stream = `test-${key}`;
      const existing = await store.readStream(stream);
      const events = types.map((type) => ({ id: randomUUID(), type, data: {}, metadata: { partition_key: key } }));
      await store.append(stream, events, existing.length === 0 ? 'no_stream' : existing.length - 1);
    },
    async cleanup() {
      await log.close();
      deadLetters.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('embedded event log: the groups of one log read $all together', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'log-shared-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A store whose reads of `$all` are counted, event by event. */
  const counted = (path: string) => {
    const store = createSqliteEventStore({ path });
    const reads = { events: 0 };
    const readAll: typeof store.readAll = async (after, limit) => {
      const events = await store.readAll(after, limit);
      reads.events += events.length;
      return events;
    };
    return { store, reads, shared: { ...store, readAll } };
  };
  const append = async (store: ReturnType<typeof createSqliteEventStore>, stream: string, n: number) =>
    store.append(
      stream,
      Array.from({ length: n }, (_, i) => ({ id: randomUUID(), type: `E${i}`, data: { i }, metadata: { partition_key: stream } })),
      'no_stream',
    );

  it('reads each event from the store once for four groups in step, and each gets every event in order', async () => {
    const { store, reads, shared } = counted(join(dir, 'events.sqlite'));
    const deadLetters = createSqliteDeadLetterStore({ path: join(dir, 'events.sqlite') });
    const log = createEmbeddedEventLog({ store: shared, logger, deadLetters });
    const seen: number[][] = [[], [], [], []];
    try {
      for (const [g, into] of seen.entries()) await log.subscribe(`g${g}`, async (e) => void into.push((e.data as { i: number }).i));
      await append(store, 's-1', 300);
      await waitFor(() => seen.every((s) => s.length === 300), { timeoutMs: 10_000, what: 'every group has 300 events' });
      for (const s of seen)
        assert.deepEqual(
          s,
          Array.from({ length: 300 }, (_, i) => i),
        );
      // 300 for the first group to ask; a group can miss the shared batch only by reading at another position.
      assert.ok(reads.events < 600, `the four groups read ${reads.events} events from the store for 300`);
    } finally {
      await log.close();
      deadLetters.close();
      await store.close();
    }
  });

  it('a group held back reads on by itself and still gets every event once, in order', async () => {
    const { store, shared } = counted(join(dir, 'events.sqlite'));
    const deadLetters = createSqliteDeadLetterStore({ path: join(dir, 'events.sqlite') });
    const log = createEmbeddedEventLog({ store: shared, logger, deadLetters });
    const quick: number[] = [];
    const slow: number[] = [];
    try {
      await log.subscribe('quick', async (e) => void quick.push((e.data as { i: number }).i));
      // At most 3 unsettled, each settling 2 ms later: it falls behind the quick group.
      await log.subscribe(
        'slow',
        async (e) => ({ settled: new Promise<void>((r) => setTimeout(() => (slow.push((e.data as { i: number }).i), r()), 2)) }),
        { maxInFlight: 3, concurrency: 1 },
      );
      await append(store, 's-1', 200);
      await waitFor(() => quick.length === 200, { timeoutMs: 10_000, what: 'the quick group has 200 events' });
      await append(store, 's-2', 50);
      await waitFor(() => slow.length === 250 && quick.length === 250, { timeoutMs: 20_000, what: 'both groups have 250 events' });
      assert.deepEqual(slow, [...Array.from({ length: 200 }, (_, i) => i), ...Array.from({ length: 50 }, (_, i) => i)]);
      assert.deepEqual(quick, slow);
    } finally {
      await log.close();
      deadLetters.close();
      await store.close();
    }
  });
});

// The contract's made-up event types have no Avro schema: the Kafka run uses a JSON codec, and
// the Avro codec has its own tests (test/unit/avro-codec.test.ts).
const jsonCodec = {
  encode: (e: StoredEvent) => Buffer.from(JSON.stringify(e)),
  decode: (b: Buffer) => JSON.parse(b.toString('utf8')) as StoredEvent,
};

/** MongoDB's store when MONGO_URL is set (in a database of its own, dropped afterwards), else one in memory. */
async function kafkaRunDeadLetters(): Promise<{ store: DeadLetterStore; close(): Promise<void> }> {
  if (!process.env.MONGO_URL) return { store: createMemoryDeadLetterStore(), close: async () => undefined };
  const client = await MongoClient.connect(process.env.MONGO_URL);
  const db = client.db(`contract_letters_${randomUUID().slice(0, 8)}`);
  return {
    store: createMongoDeadLetterStore(db),
    async close() {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
    },
  };
}

// KAFKA_BROKERS when set, else librdkafka's mock cluster (test/fixtures/kafka.ts). The mock has no
// DeleteTopics: each test has a topic of its own, and cleanup's delete is only for a real Kafka.
const broker = kafkaSuite({ brokers: 1 });

describeEventLogContract(
  'Kafka',
  async () => {
    const kafka = new Kafka({ clientId: 'contract', brokers: broker.peer().brokers, logLevel: logLevel.NOTHING });
    const topic = `contract-${randomUUID()}`;
    await ensureTopic(kafka, topic, 4);
    const letters = await kafkaRunDeadLetters();
    const log = createKafkaEventLog({
      kafka,
      topic,
      codec: jsonCodec,
      logger,
      deadLetters: letters.store,
      retryBaseMs: 20,
      retryPollMs: 200,
      commitIntervalMs: 200,
    });
    const producer = createKafkaProducer({ kafka, topic, codec: jsonCodec, logger });
    let raw: Producer | null = null;
    let position = 0;
    return {
      log,
      deadLetters: letters.store,
      async produce(key, types) {
        const events = types.map((type, revision) => ({
          id: randomUUID(),
          type,
          data: {},
          metadata: { partition_key: key },
          streamId: `test-${key}`,
          revision,
          position: String(++position),
          createdAt: new Date().toISOString(),
        }));
        await producer.publish(events);
        // As the relay does after each batch: how far the store is published, in every partition.
        await producer.publishMark!(events[events.length - 1].position);
      },
      async produceUndecodable(key) {
        if (!raw) {
          raw = kafka.producer();
          await raw.connect();
        }
        await raw.send({ topic, messages: [{ key, value: Buffer.from([0xc3, 0x01, 0xde, 0xad]) }] });
      },
      async cleanup() {
        await log.close();
        await producer.close();
        await raw?.disconnect();
        await letters.close();
        const admin = kafka.admin();
        await admin.connect();
        await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
        await admin.disconnect();
      },
    };
  },
  { before: broker.before, after: broker.after, lanes: 4, timeoutMs: 60_000, watermarkFromMarks: true },
);
