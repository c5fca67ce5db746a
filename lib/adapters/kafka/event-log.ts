import type { EventLog, LogSubscription } from '../../ports/event-log';
import { subscribeKafka, type KafkaConsumerDeps } from './consumer';

/**
 * The distributed EventLog: one Kafka topic, keyed by `metadata.partition_key` so a project's
 * events stay in one partition and in order. Each subscription is one member of its consumer
 * group (consumer.ts): at-least-once delivery, offsets committed by hand at the low-water mark of
 * settled messages, poison set aside in the dead-letter store after `maxAttempts` tries.
 */

export type KafkaLogDeps = KafkaConsumerDeps;

export { createKafkaProducer, ensureTopic, unpublishable, type KafkaProducerDeps } from './producer';

export function createKafkaEventLog(deps: KafkaLogDeps): EventLog {
  const subscriptions = new Set<LogSubscription>();
  return {
    async subscribe(group, handler, options) {
      const subscription = await subscribeKafka(deps, group, handler, options);
      const close = subscription.close;
      const tracked: LogSubscription = {
        status: () => subscription.status(),
        onWatermark: (listener) => subscription.onWatermark?.(listener),
        onPartitionMark: (listener) => subscription.onPartitionMark?.(listener),
        async close() {
          await close();
          subscriptions.delete(tracked);
        },
      };
      subscriptions.add(tracked);
      return tracked;
    },
    async close() {
      await Promise.all([...subscriptions].map((s) => s.close()));
    },
  };
}
