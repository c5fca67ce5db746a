import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaMessage } from 'kafkajs';
import type { Logger } from 'pino';
import type { DeadLetter, DeadLetterStore, NewDeadLetter } from '../../ports/dead-letters';
import type { StoredEvent } from '../../ports/event-store';
import type { EventCodec } from './avro-codec';

/** Dead letters of the Kafka consumer: what a letter holds, storing it, and operator retries. */

const REASON_MAX = 2000;
const HEADER_MAX = 200;

export const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, REASON_MAX);

export const eventLetter = (source: string, event: StoredEvent, reason: string, attempts: number): NewDeadLetter => ({
  source,
  event_id: event.id,
  event_type: event.type,
  stream_id: event.streamId,
  position: event.position,
  reason,
  attempts,
  payload: JSON.stringify(event),
  payload_encoding: 'json',
});

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
 * Stores a letter, trying until it is stored: the offset moves past the message only once its
 * letter exists, else a store outage would lose the event. False when `signal` ended the wait.
 */
export async function putUntilStored(
  store: DeadLetterStore,
  letter: NewDeadLetter,
  options: { log: Logger; signal: AbortSignal; delayOf: (attempt: number) => number; gone?: () => boolean },
): Promise<boolean> {
  for (let attempt = 1; !options.signal.aborted && !options.gone?.(); attempt++) {
    try {
      await store.put(letter);
      return true;
    } catch (err) {
      options.log.error(
        { err, attempt, event_id: letter.event_id, position: letter.position },
        'could not store a dead letter; will retry',
      );
      await sleep(options.delayOf(attempt), undefined, { signal: options.signal }).catch(() => undefined);
    }
  }
  return false;
}

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
