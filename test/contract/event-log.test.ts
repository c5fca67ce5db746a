import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { createEmbeddedEventLog } from '../../lib/adapters/embedded/event-log';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createKafkaEventLog, createKafkaProducer, ensureTopic } from '../../lib/adapters/kafka/event-log';
import type { StoredEvent } from '../../lib/ports/event-store';
import { skipUnless } from '../fixtures/wait';
import { describeEventLogContract } from './event-log.contract';

const logger = pino({ level: 'silent' });

describeEventLogContract('embedded ($all of the SQLite store)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'log-'));
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
  const log = createEmbeddedEventLog({ store, logger, retryBaseMs: 5 });
  return {
    log,
    async produce(key, types) {
      const stream = `test-${key}`;
      const existing = await store.readStream(stream);
      const events = types.map((type) => ({ id: randomUUID(), type, data: {}, metadata: { partition_key: key } }));
      await store.append(stream, events, existing.length === 0 ? 'no_stream' : existing.length - 1);
    },
    async cleanup() {
      await log.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

// The contract's made-up event types have no Avro schema: the Kafka run uses a JSON codec, and
// the Avro codec has its own tests (test/unit/avro-codec.test.ts).
const jsonCodec = {
  encode: (e: StoredEvent) => Buffer.from(JSON.stringify(e)),
  decode: (b: Buffer) => JSON.parse(b.toString('utf8')) as StoredEvent,
};

describeEventLogContract(
  'Kafka',
  async () => {
    const kafka = new Kafka({ clientId: 'contract', brokers: process.env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
    const topic = `contract-${randomUUID()}`;
    await ensureTopic(kafka, topic, 4);
    const log = createKafkaEventLog({ kafka, topic, codec: jsonCodec, logger, retryBaseMs: 20 });
    const producer = createKafkaProducer({ kafka, topic, codec: jsonCodec, logger });
    let position = 0;
    return {
      log,
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
      },
      async cleanup() {
        await log.close();
        await producer.close();
        const admin = kafka.admin();
        await admin.connect();
        await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
        await admin.disconnect();
      },
    };
  },
  { before: skipUnless('KAFKA_BROKERS'), keysMayShareALane: true, timeoutMs: 60_000 },
);
