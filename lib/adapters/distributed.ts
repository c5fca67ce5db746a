import { EventStoreDBClient } from '@eventstore/db-client';
import { Kafka, logLevel } from 'kafkajs';
import { MongoClient } from 'mongodb';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { EVENT_SCHEMA_DIR } from '../paths';
import type { DeadLetterStore } from '../ports/dead-letters';
import type { EventLog, LogProducer } from '../ports/event-log';
import type { EventStore } from '../ports/event-store';
import { createEsdbEventStore } from './eventstoredb/event-store';
import { createAvroCodec } from './kafka/avro-codec';
import { deadLetterTopicOf, withDeadLetterTopic } from './kafka/dead-letter-topic';
import { createKafkaEventLog, createKafkaProducer, ensureTopic } from './kafka/event-log';
import { createMongoDeadLetterStore } from './mongodb/dead-letters';
import { createMongoReadStore } from './mongodb/read-store';
import { createMongoSearchIndex } from './mongodb/search-index';

/**
 * The adapters that talk to servers (EventStoreDB, Kafka, MongoDB), built from their settings.
 * from-config.ts and config.ts load this module only when one of them is configured: their
 * clients cost a process 200–300 ms and about 25 MB of memory to load (measured), which an embedded
 * service, the default, would pay for nothing.
 */

type KafkaSettings = NonNullable<Config['kafka']>;

export const esdbEventStore = (url: string): EventStore => createEsdbEventStore(EventStoreDBClient.connectionString(url));

function kafkaClient(kafka: KafkaSettings, logger: Logger): Kafka {
  return new Kafka({
    clientId: 'media-project-service',
    brokers: kafka.brokers,
    logLevel: logLevel.WARN,
    logCreator: () => (entry) => logger.child({ component: 'kafkajs' }).warn({ kafka: entry.log }, entry.log.message),
  });
}

export async function kafkaEventLog(kafka: KafkaSettings, logger: Logger, deadLetters: DeadLetterStore): Promise<EventLog> {
  const client = kafkaClient(kafka, logger);
  await ensureTopic(client, kafka.topic, kafka.partitions);
  const codec = createAvroCodec({ schemaDir: EVENT_SCHEMA_DIR });
  return createKafkaEventLog({ kafka: client, topic: kafka.topic, codec, logger, deadLetters, sessionTimeoutMs: kafka.sessionTimeoutMs });
}

export async function kafkaProducer(kafka: KafkaSettings, logger: Logger): Promise<LogProducer> {
  const client = kafkaClient(kafka, logger);
  await ensureTopic(client, kafka.topic, kafka.partitions);
  return createKafkaProducer({ kafka: client, topic: kafka.topic, codec: createAvroCodec({ schemaDir: EVENT_SCHEMA_DIR }), logger });
}

/** `store`, each letter also copied to `<topic>.dead-letters` for whoever reads the stream. */
export function withKafkaDeadLetterCopies<S extends DeadLetterStore & { close(): Promise<void> }>(
  store: S,
  kafka: KafkaSettings,
  logger: Logger,
): DeadLetterStore & { close(): Promise<void> } {
  const copied = withDeadLetterTopic(store, { kafka: kafkaClient(kafka, logger), topic: deadLetterTopicOf(kafka.topic), logger });
  return {
    ...copied,
    async close() {
      await copied.close();
      await store.close();
    },
  };
}

export async function mongoReadSide(url: string) {
  const mongo = await MongoClient.connect(url);
  const read = createMongoReadStore(mongo.db());
  const search = await createMongoSearchIndex(mongo.db());
  return { mongo, read, search };
}

export const mongoDeadLetters = (mongo: MongoClient) => createMongoDeadLetterStore(mongo.db());

/** Throws when `input` is not a MongoDB connection string as the driver reads it (config.ts says how). */
export function checkMongoUrl(input: string): void {
  new MongoClient(input);
}
