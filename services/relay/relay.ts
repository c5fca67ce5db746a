import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AppError } from '../../lib/domain/errors';
import type { DeadLetterStore } from '../../lib/ports/dead-letters';
import type { CheckpointStore, LogProducer } from '../../lib/ports/event-log';
import type { EventStore, StoredEvent, Subscription } from '../../lib/ports/event-store';

/**
 * The relay forwards the event store's `$all` to the event log (DESIGN §1). Delivery is at least
 * once: the checkpoint is saved only after the log acknowledged a batch, so a crash between the
 * two re-publishes that batch and never loses one.
 *
 * Poison never blocks: an event the log can never take (no schema, does not fit it, too large)
 * makes the producer throw a non-retriable AppError. The relay then publishes that batch one
 * event at a time, sets each such event aside in the dead-letter store (source `relay`) and goes
 * on, so the rest still reaches the log in store order. Any other failure (the broker is down)
 * is retried forever with the same batch, in order. A letter an operator marks for retry is
 * published again on its own, out of store order: consumers already tolerate that (they dedupe
 * and heal gaps from the store).
 */

export const RELAY_SOURCE = 'relay';

export interface RelayDeps {
  readonly store: EventStore;
  readonly producer: LogProducer;
  readonly checkpoints: CheckpointStore;
  readonly deadLetters: DeadLetterStore;
  readonly logger: Logger;
  /** Checkpoint name; two relays with the same name must not run at once. */
  readonly name?: string;
  readonly batchSize?: number;
  /** How long an incomplete batch may wait for more events before it is published. */
  readonly maxDelayMs?: number;
  /** Back-off between publish attempts: doubles from `initialMs` up to `maxMs`. */
  readonly retry?: { readonly initialMs: number; readonly maxMs: number };
  /** How often letters an operator marked for retry are looked for. */
  readonly retryPollMs?: number;
}

export interface RelayStatus {
  readonly running: boolean;
  /** Events read from the store and not yet acknowledged by the log (nor set aside). */
  readonly lag: number;
}

export interface Relay {
  start(): Promise<void>;
  /** Stops following; a batch not yet acknowledged is dropped (the next start re-reads it). */
  stop(): Promise<void>;
  status(): RelayStatus;
}

const DEFAULTS = { name: 'relay', batchSize: 256, maxDelayMs: 20, retry: { initialMs: 100, maxMs: 10_000 }, retryPollMs: 5_000 };

const isUnpublishable = (err: unknown): err is AppError => err instanceof AppError && !err.retriable;
const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

type Outcome = { readonly kind: 'acked' } | { readonly kind: 'refused'; readonly reason: string } | { readonly kind: 'stopped' };
const ACKED: Outcome = { kind: 'acked' };
const STOPPED: Outcome = { kind: 'stopped' };

export function createRelay(deps: RelayDeps): Relay {
  const name = deps.name ?? DEFAULTS.name;
  const batchSize = deps.batchSize ?? DEFAULTS.batchSize;
  const maxDelayMs = deps.maxDelayMs ?? DEFAULTS.maxDelayMs;
  const retry = deps.retry ?? DEFAULTS.retry;
  const log = deps.logger.child({ component: 'relay', relay: name });

  let pending: StoredEvent[] = [];
  let timer: NodeJS.Timeout | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  // Batches are delivered one after the other, so the log sees them in store order.
  let delivering: Promise<void> = Promise.resolve();
  let retrying: Promise<void> | null = null;
  let started = false;
  const stopping = new AbortController();
  let subscription: Subscription | null = null;
  let inHand = 0;

  const pause = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined);
  const stopped = () => stopping.signal.aborted;

  function clearTimer(): void {
    if (timer) clearTimeout(timer);
    timer = null;
  }

  /** Retries transient failures until the log acknowledged; a refusal for good is returned at once. */
  async function publishWithRetry(batch: readonly StoredEvent[]): Promise<Outcome> {
    let delayMs = retry.initialMs;
    for (let attempt = 1; !stopped(); attempt++) {
      try {
        await deps.producer.publish(batch);
        return ACKED;
      } catch (err) {
        if (isUnpublishable(err)) return { kind: 'refused', reason: reasonOf(err) };
        log.warn({ err, attempt, delayMs, size: batch.length }, 'publish failed; retrying the same batch');
        await pause(delayMs);
        delayMs = Math.min(delayMs * 2, retry.maxMs);
      }
    }
    return STOPPED;
  }

  /** Records an event the log refused; retried until stored, else the checkpoint would skip it. */
  async function setAside(event: StoredEvent, reason: string): Promise<boolean> {
    log.error({ event_id: event.id, type: event.type, position: event.position, reason }, 'event cannot be published; dead-lettered');
    let delayMs = retry.initialMs;
    while (!stopped()) {
      try {
        await deps.deadLetters.put({
          source: RELAY_SOURCE,
          event_id: event.id,
          event_type: event.type,
          stream_id: event.streamId,
          position: event.position,
          reason,
          attempts: 1,
          payload: JSON.stringify(event),
          payload_encoding: 'json',
        });
        return true;
      } catch (err) {
        log.error({ err, event_id: event.id, delayMs }, 'could not store a dead letter; will retry');
        await pause(delayMs);
        delayMs = Math.min(delayMs * 2, retry.maxMs);
      }
    }
    return false;
  }

  /** True once every event of the batch is in the log or set aside. */
  async function relay(batch: readonly StoredEvent[]): Promise<boolean> {
    const outcome = await publishWithRetry(batch);
    if (outcome.kind !== 'refused') return outcome.kind === 'acked';
    if (batch.length === 1) return setAside(batch[0], outcome.reason);
    // The producer cannot say which event it refused (a broker's "too large" names none): one at a time.
    log.warn({ size: batch.length, reason: outcome.reason }, 'batch refused; publishing its events one at a time');
    for (const event of batch) {
      const one = await publishWithRetry([event]);
      if (one.kind === 'stopped') return false;
      if (one.kind === 'refused' && !(await setAside(event, one.reason))) return false;
    }
    return true;
  }

  async function deliver(batch: readonly StoredEvent[]): Promise<void> {
    if (!(await relay(batch))) return;
    inHand = Math.max(0, inHand - batch.length);
    const position = batch[batch.length - 1].position;
    // Best effort: a mark that did not go only delays reads that wait for it until the next batch's.
    await deps.producer.publishMark?.(position).catch((err: unknown) => log.warn({ err, position }, 'could not publish a watermark mark'));
    try {
      await deps.checkpoints.save(name, position);
      log.debug({ size: batch.length, position }, 'batch relayed');
    } catch (err) {
      // The batch is in the log; a lagging checkpoint only means it may be published again.
      log.warn({ err, position }, 'checkpoint save failed');
    }
  }

  function flush(): Promise<void> {
    clearTimer();
    if (pending.length > 0) {
      const batch = pending;
      pending = [];
      delivering = delivering.then(() => deliver(batch));
    }
    return delivering;
  }

  // Never throws: a throwing handler would end the subscription.
  async function onEvent(event: StoredEvent): Promise<void> {
    if (stopped()) return;
    pending.push(event);
    inHand++;
    // Awaiting a full batch holds the subscription back while the log is slow or down.
    if (pending.length >= batchSize) await flush();
    else if (!timer) timer = setTimeout(() => void flush(), maxDelayMs);
  }

  /** Publishes letters an operator marked for retry; one still refused goes back to `dead`. */
  const retryLetters = () =>
    (retrying ??= (async () => {
      for (const letter of await deps.deadLetters.dueRetries(RELAY_SOURCE, 10)) {
        if (stopped()) return;
        try {
          await deps.producer.publish([JSON.parse(letter.payload) as StoredEvent]);
          await deps.deadLetters.remove(letter.id);
          log.info({ letter: letter.id, event_id: letter.event_id }, 'dead letter published on retry');
        } catch (err) {
          if (!isUnpublishable(err) && !(err instanceof SyntaxError)) throw err; // the log is down: the letter waits
          log.error({ err, letter: letter.id, event_id: letter.event_id }, 'dead letter refused again');
          await deps.deadLetters.markDead(letter.id, reasonOf(err));
        }
      }
    })()
      .catch((err: unknown) => log.warn({ err }, 'dead-letter retries failed; will try again'))
      .finally(() => (retrying = null)));

  return {
    async start() {
      const from = await deps.checkpoints.load(name);
      log.info({ from }, 'relay following $all');
      subscription = deps.store.subscribeAll(from, onEvent);
      retryTimer = setInterval(() => void retryLetters(), deps.retryPollMs ?? DEFAULTS.retryPollMs);
      started = true;
    },
    async stop() {
      stopping.abort();
      clearTimer();
      if (retryTimer) clearInterval(retryTimer);
      pending = [];
      await subscription?.close();
      // A publish already in flight may still be acknowledged; its checkpoint is then saved.
      await delivering;
      await retrying;
      inHand = 0;
      log.info('relay stopped');
    },
    status: () => ({ running: started && !stopped(), lag: inHand }),
  };
}
