import type { Logger } from 'pino';
import type { CheckpointStore, LogProducer } from '../../lib/ports/event-log';
import type { EventStore, StoredEvent, Subscription } from '../../lib/ports/event-store';

/**
 * The relay forwards the event store's `$all` to the event log (DESIGN §1). Delivery is at least
 * once: the checkpoint is saved only after the log acknowledged a batch, so a crash between the
 * two re-publishes that batch and never loses one.
 */

export interface RelayDeps {
  readonly store: EventStore;
  readonly producer: LogProducer;
  readonly checkpoints: CheckpointStore;
  readonly logger: Logger;
  /** Checkpoint name; two relays with the same name must not run at once. */
  readonly name?: string;
  readonly batchSize?: number;
  /** How long an incomplete batch may wait for more events before it is published. */
  readonly maxDelayMs?: number;
  /** Back-off between publish attempts: doubles from `initialMs` up to `maxMs`. */
  readonly retry?: { readonly initialMs: number; readonly maxMs: number };
}

export interface Relay {
  start(): Promise<void>;
  /** Stops following; a batch not yet acknowledged is dropped (the next start re-reads it). */
  stop(): Promise<void>;
}

const DEFAULTS = { name: 'relay', batchSize: 256, maxDelayMs: 20, retry: { initialMs: 100, maxMs: 10_000 } };

export function createRelay(deps: RelayDeps): Relay {
  const name = deps.name ?? DEFAULTS.name;
  const batchSize = deps.batchSize ?? DEFAULTS.batchSize;
  const maxDelayMs = deps.maxDelayMs ?? DEFAULTS.maxDelayMs;
  const retry = deps.retry ?? DEFAULTS.retry;
  const log = deps.logger.child({ component: 'relay', relay: name });

  let pending: StoredEvent[] = [];
  let timer: NodeJS.Timeout | null = null;
  // Batches are delivered one after the other, so the log sees them in store order.
  let delivering: Promise<void> = Promise.resolve();
  let stopping = false;
  let subscription: Subscription | null = null;
  let wakeUp = (): void => undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wakeUp = () => (clearTimeout(t), resolve());
    });

  function clearTimer(): void {
    if (timer) clearTimeout(timer);
    timer = null;
  }

  /** Resolves true once the log acknowledged, false if the relay stopped first. */
  async function publishWithRetry(batch: readonly StoredEvent[]): Promise<boolean> {
    let delayMs = retry.initialMs;
    for (let attempt = 1; !stopping; attempt++) {
      try {
        await deps.producer.publish(batch);
        return true;
      } catch (err) {
        log.warn({ err, attempt, delayMs, size: batch.length }, 'publish failed; retrying the same batch');
        await pause(delayMs);
        delayMs = Math.min(delayMs * 2, retry.maxMs);
      }
    }
    return false;
  }

  async function deliver(batch: readonly StoredEvent[]): Promise<void> {
    if (!(await publishWithRetry(batch))) return;
    const position = batch[batch.length - 1].position;
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
    if (stopping) return;
    pending.push(event);
    // Awaiting a full batch holds the subscription back while the log is slow or down.
    if (pending.length >= batchSize) await flush();
    else if (!timer) timer = setTimeout(() => void flush(), maxDelayMs);
  }

  return {
    async start() {
      const from = await deps.checkpoints.load(name);
      log.info({ from }, 'relay following $all');
      subscription = deps.store.subscribeAll(from, onEvent);
    },
    async stop() {
      stopping = true;
      clearTimer();
      pending = [];
      wakeUp();
      await subscription?.close();
      // A publish already in flight may still be acknowledged; its checkpoint is then saved.
      await delivering;
      log.info('relay stopped');
    },
  };
}
