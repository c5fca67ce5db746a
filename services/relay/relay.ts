import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DeadLetterStore } from '../../lib/ports/dead-letters';
import type { CheckpointStore, LogProducer } from '../../lib/ports/event-log';
import type { EventStore, Subscription } from '../../lib/ports/event-store';
import { batching } from './batching';
import { retryingLetters, type Relaying } from './publishing';

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
 *
 * After each batch, before its checkpoint, the relay marks every partition with the batch's last
 * position (`publishMark`, best effort): how consumers know how far they have handled the store.
 * publishing.ts holds the publishing and setting aside, batching.ts the batches and checkpoint.
 */

export { RELAY_SOURCE } from './publishing';

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

export function createRelay(deps: RelayDeps): Relay {
  const name = deps.name ?? DEFAULTS.name;
  const stopping = new AbortController();
  const r: Relaying = {
    deps,
    log: deps.logger.child({ component: 'relay', relay: name }),
    retry: deps.retry ?? DEFAULTS.retry,
    stopped: () => stopping.signal.aborted,
    pause: (ms) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined),
  };
  const batches = batching(r, name, deps.batchSize ?? DEFAULTS.batchSize, deps.maxDelayMs ?? DEFAULTS.maxDelayMs);
  const retries = retryingLetters(r);
  let retryTimer: NodeJS.Timeout | null = null;
  let subscription: Subscription | null = null;
  let started = false;

  return {
    async start() {
      const from = await deps.checkpoints.load(name);
      r.log.info({ from }, 'relay following $all');
      subscription = deps.store.subscribeAll(from, batches.onEvent);
      retryTimer = setInterval(() => void retries.retry(), deps.retryPollMs ?? DEFAULTS.retryPollMs);
      started = true;
    },
    async stop() {
      stopping.abort();
      if (retryTimer) clearInterval(retryTimer);
      batches.drop();
      await subscription?.close();
      // A publish already in flight may still be acknowledged; its checkpoint is then saved.
      await batches.delivered();
      await retries.inProgress();
      batches.forget();
      r.log.info('relay stopped');
    },
    status: () => ({ running: started && !r.stopped(), lag: batches.inHand() }),
  };
}
