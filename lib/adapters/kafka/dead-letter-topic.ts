import type { Kafka, Producer } from 'kafkajs';
import type { Logger } from 'pino';
import type { DeadLetter, DeadLetterStore } from '../../ports/dead-letters';
import { ensureTopic } from './producer';

/**
 * In Kafka mode every dead letter is also produced to `<topic>.dead-letters` (key: the event id,
 * else the position; value: the letter as JSON), for data teams who read the stream. Best
 * effort: the store stays the operators' record (list, retry, drop), and a letter that cannot
 * be produced is only logged, so a Kafka outage never holds back the consumer that gave up.
 */

export const deadLetterTopicOf = (topic: string) => `${topic}.dead-letters`;

export function withDeadLetterTopic(
  store: DeadLetterStore,
  deps: { readonly kafka: Kafka; readonly topic: string; readonly logger: Logger },
): DeadLetterStore & { close(): Promise<void> } {
  const log = deps.logger.child({ component: 'dead-letter-topic', topic: deps.topic });
  let producer: Producer | null = null;
  let ready: Promise<Producer> | null = null;
  const sending = new Set<Promise<void>>();

  const connect = () =>
    (ready ??= (async () => {
      await ensureTopic(deps.kafka, deps.topic, 1);
      producer ??= deps.kafka.producer();
      await producer.connect();
      return producer;
    })().catch((err: unknown) => {
      ready = null; // the next letter tries again
      throw err;
    }));

  const produce = (letter: DeadLetter) => {
    const work = connect()
      .then((p) =>
        p.send({
          topic: deps.topic,
          messages: [
            { key: letter.event_id ?? letter.position ?? letter.id, value: JSON.stringify(letter), headers: { source: letter.source } },
          ],
        }),
      )
      .then(
        () => undefined,
        (err: unknown) => log.warn({ err, letter: letter.id, source: letter.source }, 'dead letter not produced to the topic'),
      );
    sending.add(work);
    void work.finally(() => sending.delete(work));
  };

  return {
    list: (filter) => store.list(filter),
    get: (id) => store.get(id),
    markRetry: (id) => store.markRetry(id),
    remove: (id) => store.remove(id),
    dueRetries: (source, limit) => store.dueRetries(source, limit),
    markDead: (id, reason) => store.markDead(id, reason),
    count: () => store.count(),
    async put(letter) {
      const stored = await store.put(letter);
      produce(stored);
      return stored;
    },
    async close() {
      await Promise.all([...sending]);
      if (producer && ready) await producer.disconnect().catch(() => undefined);
      ready = null;
    },
  };
}
