import type { StoredEvent } from '../../lib/ports/event-store';
import { relayBatch, type Relaying } from './publishing';

/**
 * Gathers the store's events into batches (`batchSize`, or what came within `maxDelayMs`) and
 * delivers them one after the other, so the log sees them in store order. After a batch: the
 * marks, then the checkpoint.
 */
export function batching(r: Relaying, name: string, batchSize: number, maxDelayMs: number) {
  let pending: StoredEvent[] = [];
  let timer: NodeJS.Timeout | null = null;
  let delivering: Promise<void> = Promise.resolve();
  let inHand = 0;

  function clearTimer(): void {
    if (timer) clearTimeout(timer);
    timer = null;
  }

  async function deliver(batch: readonly StoredEvent[]): Promise<void> {
    if (!(await relayBatch(r, batch))) return;
    inHand = Math.max(0, inHand - batch.length);
    const position = batch[batch.length - 1].position;
    await publishMark(r, position);
    await saveCheckpoint(r, name, position, batch.length);
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

  return {
    /** The store subscription's handler; never throws, as a throwing handler would end the subscription. */
    async onEvent(event: StoredEvent): Promise<void> {
      if (r.stopped()) return;
      pending.push(event);
      inHand++;
      // Awaiting a full batch holds the subscription back while the log is slow or down.
      if (pending.length >= batchSize) await flush();
      else if (!timer) timer = setTimeout(() => void flush(), maxDelayMs);
    },
    /** Drops the events not yet in a batch being delivered (the next start re-reads them). */
    drop(): void {
      clearTimer();
      pending = [];
    },
    /** The batch being delivered, if any, done. */
    delivered: () => delivering,
    /** Events read from the store and not yet acknowledged by the log (nor set aside). */
    inHand: () => inHand,
    forget: () => void (inHand = 0),
  };
}

/** Best effort: a mark that did not go only delays reads that wait for it until the next batch's. */
async function publishMark(r: Relaying, position: string): Promise<void> {
  await r.deps.producer
    .publishMark?.(position)
    .catch((err: unknown) => r.log.warn({ err, position }, 'could not publish a watermark mark'));
}

async function saveCheckpoint(r: Relaying, name: string, position: string, size: number): Promise<void> {
  try {
    await r.deps.checkpoints.save(name, position);
    r.log.debug({ size, position }, 'batch relayed');
  } catch (err) {
    // The batch is in the log; a lagging checkpoint only means it may be published again.
    r.log.warn({ err, position }, 'checkpoint save failed');
  }
}
