import type { Logger } from 'pino';
import { eventLetter, reasonOf } from '../../lib/app/dead-letters';
import { AppError } from '../../lib/domain/errors';
import type { StoredEvent } from '../../lib/ports/event-store';
import type { RelayDeps } from './relay';

/** How the relay gets a batch into the log: retries, refused events set aside, operator retries. */

export const RELAY_SOURCE = 'relay';

/** What publishing needs; `stopped` is true once the relay is stopping, and `pause` ends early then. */
export type Relaying = {
  readonly deps: RelayDeps;
  readonly log: Logger;
  readonly retry: { readonly initialMs: number; readonly maxMs: number };
  readonly stopped: () => boolean;
  readonly pause: (ms: number) => Promise<void>;
};

const isUnpublishable = (err: unknown): err is AppError => err instanceof AppError && !err.retriable;

type Outcome = { readonly kind: 'acked' } | { readonly kind: 'refused'; readonly reason: string } | { readonly kind: 'stopped' };
const ACKED: Outcome = { kind: 'acked' };
const STOPPED: Outcome = { kind: 'stopped' };

/** True once every event of the batch is in the log or set aside. */
export async function relayBatch(r: Relaying, batch: readonly StoredEvent[]): Promise<boolean> {
  const outcome = await publishWithRetry(r, batch);
  if (outcome.kind !== 'refused') return outcome.kind === 'acked';
  if (batch.length === 1) return setAside(r, batch[0], outcome.reason);
  // The producer cannot say which event it refused (a broker's "too large" names none): one at a time.
  r.log.warn({ size: batch.length, reason: outcome.reason }, 'batch refused; publishing its events one at a time');
  for (const event of batch) {
    const one = await publishWithRetry(r, [event]);
    if (one.kind === 'stopped') return false;
    if (one.kind === 'refused' && !(await setAside(r, event, one.reason))) return false;
  }
  return true;
}

/** Retries transient failures until the log acknowledged; a refusal for good is returned at once. */
async function publishWithRetry(r: Relaying, batch: readonly StoredEvent[]): Promise<Outcome> {
  let delayMs = r.retry.initialMs;
  for (let attempt = 1; !r.stopped(); attempt++) {
    try {
      await r.deps.producer.publish(batch);
      return ACKED;
    } catch (err) {
      if (isUnpublishable(err)) return { kind: 'refused', reason: reasonOf(err) };
      r.log.warn({ err, attempt, delayMs, size: batch.length }, 'publish failed; retrying the same batch');
      await r.pause(delayMs);
      delayMs = Math.min(delayMs * 2, r.retry.maxMs);
    }
  }
  return STOPPED;
}

/** Records an event the log refused; retried until stored, else the checkpoint would skip it. */
async function setAside(r: Relaying, event: StoredEvent, reason: string): Promise<boolean> {
  r.log.error({ event_id: event.id, type: event.type, position: event.position, reason }, 'event cannot be published; dead-lettered');
  let delayMs = r.retry.initialMs;
  while (!r.stopped()) {
    try {
      await r.deps.deadLetters.put(eventLetter(RELAY_SOURCE, event, reason, 1));
      return true;
    } catch (err) {
      r.log.error({ err, event_id: event.id, delayMs }, 'could not store a dead letter; will retry');
      await r.pause(delayMs);
      delayMs = Math.min(delayMs * 2, r.retry.maxMs);
    }
  }
  return false;
}

/** Publishes letters an operator marked for retry, one pass at a time; one still refused goes back to `dead`. */
export function retryingLetters(r: Relaying) {
  let retrying: Promise<void> | null = null;
  return {
    retry: () =>
      (retrying ??= retryDue(r)
        .catch((err: unknown) => r.log.warn({ err }, 'dead-letter retries failed; will try again'))
        .finally(() => (retrying = null))),
    /** The pass in progress, if any. */
    inProgress: () => retrying,
  };
}

async function retryDue(r: Relaying): Promise<void> {
  const { deadLetters, producer } = r.deps;
  for (const letter of await deadLetters.dueRetries(RELAY_SOURCE, 10)) {
    if (r.stopped()) return;
    try {
      await producer.publish([JSON.parse(letter.payload) as StoredEvent]);
      await deadLetters.remove(letter.id);
      r.log.info({ letter: letter.id, event_id: letter.event_id }, 'dead letter published on retry');
    } catch (err) {
      if (!isUnpublishable(err) && !(err instanceof SyntaxError)) throw err; // the log is down: the letter waits
      r.log.error({ err, letter: letter.id, event_id: letter.event_id }, 'dead letter refused again');
      await deadLetters.markDead(letter.id, reasonOf(err));
    }
  }
}
