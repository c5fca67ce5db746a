import type { KafkaMessage } from 'kafkajs';
import type { Logger } from 'pino';
import type { DeadLetter, DeadLetterStore, NewDeadLetter } from '../../ports/dead-letters';
import type { StoredEvent } from '../../ports/event-store';
import { reasonOf } from '../../app/dead-letters';
import type { EventCodec } from './avro-codec';

export { eventLetter, putUntilStored, reasonOf } from '../../app/dead-letters';

/** Dead letters of the Kafka consumer: what a letter holds, storing it, and operator retries. */

const HEADER_MAX = 200;

function header(message: KafkaMessage, name: string): string | null {
  const value = message.headers?.[name];
  const text = Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'string' ? value : null;
  return text ? text.slice(0, HEADER_MAX) : null;
}

/**
 * A message that could not be decoded keeps its raw bytes, so a later codec can read it on retry.
 * The relay's headers still name the event when the body is unreadable.
 */
export const rawLetter = (source: string, partition: number, message: KafkaMessage, reason: string, attempts: number): NewDeadLetter => ({
  source,
  event_id: header(message, 'event-id'),
  event_type: header(message, 'event-type'),
  stream_id: null,
  position: `${partition}/${message.offset}`,
  reason,
  attempts,
  payload: (message.value ?? Buffer.alloc(0)).toString('base64'),
  payload_encoding: 'base64',
});

/** The event a letter holds, as the handler first saw it. */
const eventOfLetter = (letter: DeadLetter, codec: EventCodec): StoredEvent =>
  letter.payload_encoding === 'json' ? (JSON.parse(letter.payload) as StoredEvent) : codec.decode(Buffer.from(letter.payload, 'base64'));

/**
 * Handles once more the letters of `source` an operator marked for retry: a success removes the
 * letter, a failure makes it `dead` again with the new reason. Every member of a group polls, so
 * two may take the same letter: handlers are idempotent, and the second `remove` finds nothing.
 * Never throws.
 */
export async function retryDueLetters(options: {
  store: DeadLetterStore;
  source: string;
  codec: EventCodec;
  log: Logger;
  signal: AbortSignal;
  /** Resolves once the event is handled (a `settled` awaited too). */
  handle(event: StoredEvent): Promise<void>;
}): Promise<void> {
  const { store, log } = options;
  try {
    for (const letter of await store.dueRetries(options.source, 10)) {
      if (options.signal.aborted) return;
      try {
        await options.handle(eventOfLetter(letter, options.codec));
        await store.remove(letter.id);
        log.info({ letter: letter.id, event_id: letter.event_id }, 'dead letter handled on retry');
      } catch (err) {
        log.error({ err, letter: letter.id, event_id: letter.event_id }, 'dead letter failed again');
        await store.markDead(letter.id, reasonOf(err));
      }
    }
  } catch (err) {
    log.warn({ err }, 'could not retry dead letters; will try again');
  }
}
