import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DeadLetterStore, NewDeadLetter } from '../ports/dead-letters';
import type { StoredEvent } from '../ports/event-store';

/** What every log adapter does when it gives an event up: the same letter, stored until it is. */

const REASON_MAX = 2000;

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
