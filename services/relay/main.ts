import { openDeadLetters, openEventStore, openLogProducer, openReadStore } from '../../lib/adapters/from-config';
import { createReadStoreCheckpoints } from '../../lib/adapters/read-store-checkpoints';
import { ConfigError } from '../../lib/config';
import { runService } from '../../lib/run-service';
import { start } from './index';

/** Composition root of the relay: event store `$all` → Kafka, checkpoint in the read store. Run one. */
runService('relay', async (config, logger) => {
  if (!config.kafka) throw new ConfigError('invalid configuration: KAFKA_BROKERS: the relay needs a Kafka log to publish to');
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  // Operators work from the store; the topic is a copy for whoever reads the stream.
  const deadLetters = openDeadLetters(config, readSide, logger);
  const producer = await openLogProducer(config, logger);
  const relay = await start({ store, producer, checkpoints: createReadStoreCheckpoints(readSide.read), deadLetters, logger });
  return async () => {
    await relay.stop();
    await producer.close();
    await deadLetters.close();
    await readSide.close();
    await store.close();
  };
});
