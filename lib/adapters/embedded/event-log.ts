import type { Logger } from 'pino';
import type { EventLog, LogHandler, SubscribeOptions } from '../../ports/event-log';
import type { StoredEvent, Subscription } from '../../ports/event-store';
import type { SqliteEventStore } from './event-store';

/**
 * The embedded EventLog reads the embedded store's `$all` directly (no relay needed) and keeps
 * one checkpoint per consumer group beside the events. Events are spread over `concurrency`
 * lanes by partition key, like Kafka partitions: one key's events run one after the other.
 * The checkpoint is the low-water mark: the newest position before which every event has been
 * handled successfully. A crash redelivers what lies after it, so handlers are idempotent.
 */

const MAX_IN_FLIGHT = 512;
const CHECKPOINT_EVERY_MS = 200;

const laneOf = (key: string, lanes: number): number => {
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return (h >>> 0) % lanes;
};

export function createEmbeddedEventLog(deps: { store: SqliteEventStore; logger: Logger; retryBaseMs?: number }): EventLog {
  const subscriptions = new Set<Subscription>();

  async function subscribe(group: string, handler: LogHandler, options: SubscribeOptions = {}): Promise<Subscription> {
    const lanes = Math.max(1, options.concurrency ?? 4);
    const log = deps.logger.child({ group });
    const saved = deps.store.loadCheckpoint(group);
    const start = saved ?? (options.startAt === 'latest' ? deps.store.headPosition() : 0);
    let closed = false;
    // Dispatched events in position order, with whether their handler has succeeded.
    const inFlight: { position: number; done: boolean }[] = [];
    const laneTails: Promise<void>[] = Array.from({ length: lanes }, () => Promise.resolve());
    let committed = start;
    let slotFreed: () => void = () => undefined;

    /** True once the handler succeeded; false when the subscription closed first. */
    const handleWithRetry = async (event: StoredEvent): Promise<boolean> => {
      for (let attempt = 1; !closed; attempt++) {
        try {
          await handler(event, { heartbeat: async () => undefined });
          return true;
        } catch (err) {
          const delay = Math.min(30_000, (deps.retryBaseMs ?? 100) * 2 ** Math.min(attempt - 1, 10));
          log.error({ err, event_id: event.id, type: event.type, attempt, retry_in_ms: delay }, 'handler failed; will retry');
          await new Promise((r) => setTimeout(r, delay));
        }
      }
      return false;
    };

    const advance = () => {
      let moved = false;
      while (inFlight.length > 0 && inFlight[0].done) {
        committed = inFlight.shift()!.position;
        moved = true;
      }
      if (moved) slotFreed();
    };

    const checkpointTimer = setInterval(() => saveCheckpoint(), CHECKPOINT_EVERY_MS);
    let lastSaved = start;
    const saveCheckpoint = () => {
      if (committed !== lastSaved) {
        deps.store.saveCheckpoint(group, committed);
        lastSaved = committed;
      }
    };

    const dispatch = (event: StoredEvent) => {
      const entry = { position: Number(event.position), done: false };
      inFlight.push(entry);
      const lane = laneOf(String(event.metadata.partition_key ?? event.streamId), lanes);
      laneTails[lane] = laneTails[lane].then(async () => {
        if (closed || !(await handleWithRetry(event))) return;
        entry.done = true;
        advance();
      });
    };

    const feed = deps.store.subscribeAll(String(start), async (event) => {
      while (inFlight.length >= MAX_IN_FLIGHT && !closed) {
        await new Promise<void>((resolve) => (slotFreed = resolve));
      }
      if (!closed) dispatch(event);
    });

    const subscription: Subscription = {
      async close() {
        if (closed) return;
        closed = true;
        slotFreed();
        clearInterval(checkpointTimer);
        await feed.close();
        await Promise.all(laneTails);
        saveCheckpoint();
        subscriptions.delete(subscription);
      },
    };
    subscriptions.add(subscription);
    log.info({ from_position: start, lanes }, 'subscribed');
    return subscription;
  }

  return {
    subscribe,
    async close() {
      await Promise.all([...subscriptions].map((s) => s.close()));
    },
  };
}
