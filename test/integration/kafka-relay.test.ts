import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { createAvroCodec } from '../../lib/adapters/kafka/avro-codec';
import { createKafkaEventLog, createKafkaProducer, ensureTopic } from '../../lib/adapters/kafka/event-log';
import { createReadStoreCheckpoints } from '../../lib/adapters/read-store-checkpoints';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createDrive } from '../../lib/app/admin';
import { EVENT_SCHEMA_DIR } from '../../lib/paths';
import type { LogProducer, LogSubscription } from '../../lib/ports/event-log';
import type { StoredEvent } from '../../lib/ports/event-store';
import { createRelay, type Relay } from '../../services/relay/relay';
import { kafkaSuite } from '../fixtures/kafka';
import { createMemoryDeadLetterStore } from '../fixtures/memory-dead-letters';
import { waitFor } from '../fixtures/wait';

/**
 * The relay against a Kafka protocol peer (librdkafka's mock cluster, or KAFKA_BROKERS): the
 * SQLite store's `$all`, Avro-encoded into a topic, read back by a consumer group of the Kafka
 * EventLog. Real domain events (drives and their tokens, as the admin CLI writes them).
 */
describe('relay: the SQLite store to Kafka, Avro-encoded, read back by a consumer group', function () {
  this.timeout(60_000);
  const broker = kafkaSuite({ brokers: 1 });
  before(broker.before);
  after(broker.after);

  const logger = pino({ level: 'silent' });
  const codec = createAvroCodec({ schemaDir: EVENT_SCHEMA_DIR });
  let dir: string;
  let store: ReturnType<typeof createSqliteEventStore>;
  let read: ReturnType<typeof createSqliteReadStore>;
  let kafka: Kafka;
  let topic: string;
  let producer: LogProducer & { failures: number };
  let relay: Relay | null;
  let subscriptions: LogSubscription[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'relay-kafka-'));
    store = createSqliteEventStore({ path: join(dir, 'events.sqlite'), pollIntervalMs: 20 });
    read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
    // Fewer retries inside kafkajs than its default (about 20 s), so that a publish to a broker
    // that is down fails within a second or two and the relay's own retries are what is tested.
    kafka = new Kafka({
      clientId: 'relay-test',
      brokers: broker.peer().brokers,
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 100, retries: 2 },
    });
    topic = `relay-${randomUUID()}`; // the mock cannot delete topics
    await ensureTopic(kafka, topic, 4);
    const real = createKafkaProducer({ kafka, topic, codec, logger });
    producer = {
      failures: 0,
      async publish(events) {
        try {
          await real.publish(events);
        } catch (err) {
          producer.failures++;
          throw err;
        }
      },
      publishMark: (position) => real.publishMark!(position),
      close: () => real.close(),
    };
    relay = null;
    subscriptions = [];
  });

  afterEach(async () => {
    await Promise.all(subscriptions.map((s) => s.close()));
    await relay?.stop();
    await producer.close();
    await read.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // ---------------------------------------------------------------- helpers

  const checkpoints = () => createReadStoreCheckpoints(read);
  const startRelay = async () => {
    relay = createRelay({
      store,
      producer,
      checkpoints: checkpoints(),
      deadLetters: createMemoryDeadLetterStore(),
      logger,
      retry: { initialMs: 50, maxMs: 500 },
    });
    await relay.start();
  };
  const makeDrives = (n: number) =>
    Promise.all(Array.from({ length: n }, (_, i) => createDrive({ store, clock: systemClock, ids: randomIds }, { name: `Drive ${i}` })));
  const allEvents = () => store.readAll(null, 10_000);
  /** What a new consumer group reads from the start of the topic, as the Avro codec decodes it. */
  const consume = async () => {
    const seen: StoredEvent[] = [];
    const log = createKafkaEventLog({ kafka, topic, codec, logger, deadLetters: createMemoryDeadLetterStore(), commitIntervalMs: 200 });
    subscriptions.push(await log.subscribe(`reader-${randomUUID().slice(0, 8)}`, async (event) => void seen.push(event)));
    return seen;
  };
  const idsOf = (events: readonly StoredEvent[]) => events.map((e) => e.id);
  const untilSeen = (seen: StoredEvent[], ids: string[]) =>
    waitFor(() => ids.every((id) => seen.some((e) => e.id === id)), { timeoutMs: 30_000, what: `${ids.length} events in the topic` });

  // ---------------------------------------------------------------- scenarios

  it('marks every partition after each batch, so a member owning them all knows how far it has handled the store', async () => {
    await makeDrives(2);
    await startRelay();
    const seen = await consume();
    const reader = subscriptions[subscriptions.length - 1];
    const marks: bigint[] = [];
    reader.onWatermark!((position) => marks.push(position));
    const stored = await allEvents();
    await untilSeen(seen, idsOf(stored));
    const last = BigInt(stored.at(-1)!.position);
    await waitFor(() => marks.length > 0 && marks[marks.length - 1] >= last, {
      timeoutMs: 30_000,
      what: 'the watermark at the last event',
    });
    assert.ok(
      marks.every((m) => stored.filter((e) => BigInt(e.position) <= m).every((e) => seen.some((s) => s.id === e.id))),
      'every event at or before a watermark was handled when it was told',
    );
    // Another batch moves it on.
    await makeDrives(1);
    const more = await allEvents();
    await waitFor(() => marks[marks.length - 1] >= BigInt(more.at(-1)!.position), { timeoutMs: 30_000, what: 'the next batch marked' });
  });

  it('publishes every event in store order per partition key, each decoding to what the store holds', async () => {
    await makeDrives(3);
    await startRelay();
    const stored = await allEvents();
    const seen = await consume();
    await untilSeen(seen, idsOf(stored));

    assert.deepEqual(seen.map((e) => e.id).sort(), idsOf(stored).sort(), 'each event once');
    for (const event of stored)
      assert.deepEqual(
        seen.find((e) => e.id === event.id),
        event,
        `${event.type} ${event.id} round trip`,
      );
    for (const key of new Set(stored.map((e) => e.metadata.partition_key))) {
      const inKey = (events: StoredEvent[]) => idsOf(events.filter((e) => e.metadata.partition_key === key));
      assert.deepEqual(inKey(seen), inKey(stored), `store order within ${key}`);
    }
    await waitFor(async () => (await checkpoints().load('relay')) === stored.at(-1)!.position, {
      what: 'the checkpoint at the last event',
    });
  });

  it('resumes from its checkpoint after a restart: what was published is not published again', async () => {
    await makeDrives(2);
    await startRelay();
    const before = await allEvents();
    await waitFor(async () => (await checkpoints().load('relay')) === before.at(-1)!.position, { what: 'the checkpoint' });
    await relay!.stop();

    await makeDrives(1);
    await startRelay();
    const stored = await allEvents();
    const seen = await consume();
    await untilSeen(seen, idsOf(stored));
    assert.equal(seen.length, stored.length, 'each event once in the topic');
  });

  it('holds its batch while the broker is down and publishes it once the broker is back, losing nothing', async function () {
    broker.requireMock(this);
    await makeDrives(1);
    await startRelay();
    const first = await allEvents();
    await waitFor(async () => (await checkpoints().load('relay')) === first.at(-1)!.position, { what: 'the checkpoint' });

    await broker.peer().ctl('down 1');
    try {
      await makeDrives(2);
      await waitFor(() => producer.failures > 0, { timeoutMs: 30_000, what: 'a publish to fail' });
      assert.equal(await checkpoints().load('relay'), first.at(-1)!.position, 'the checkpoint waits for the broker');
      assert.ok(relay!.status().lag > 0);
    } finally {
      await broker.peer().ctl('up 1');
    }
    const stored = await allEvents();
    await waitFor(async () => (await checkpoints().load('relay')) === stored.at(-1)!.position, {
      timeoutMs: 30_000,
      what: 'the checkpoint at the last event once the broker is back',
    });
    const seen = await consume();
    await untilSeen(seen, idsOf(stored));
    assert.deepEqual(new Set(idsOf(seen)), new Set(idsOf(stored)), 'nothing lost');
  });
});
