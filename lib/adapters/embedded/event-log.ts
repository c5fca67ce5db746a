import type { Logger } from 'pino';
import type { DeadLetterStore } from '../../ports/dead-letters';
import type { EventLog, LogHandler, LogSubscription, SubscribeOptions } from '../../ports/event-log';
import type { StoredEvent } from '../../ports/event-store';
import { deliver, retryingLetters, type Group } from './event-log-delivery';
import type { SqliteEventStore } from './event-store';
import { checkpointing, lowWaterMark, type LowWaterMark } from './event-log-watermark';

/**
 * The embedded EventLog reads the embedded store's `$all` directly (no relay needed) and keeps
 * one checkpoint per consumer group beside the events. Events are spread over `concurrency`
 * lanes by partition key, like Kafka partitions: one key's events are handed to the handler one
 * after the other. A handler may take an event on and settle it later (a job in a pool): its lane
 * moves on at once. The checkpoint is the low-water mark: the newest position before which every
 * event has settled. A crash redelivers what lies after it, so handlers are idempotent.
 * An event that fails `maxAttempts` times goes to the dead-letter store and counts as settled,
 * so one poison event never stops the group.
 */

const RETRY_CAP_MS = 30_000;

export type EmbeddedLogDeps = {
  store: SqliteEventStore;
  logger: Logger;
  deadLetters: DeadLetterStore;
  /** First retry delay of a failing handler; doubles up to 30 s. */
  retryBaseMs?: number;
  /** How often letters marked for retry are looked for. */
  retryPollMs?: number;
};

/** The lane a partition key's events go to (exported for tests that need two keys apart). */
export const laneOf = (key: string, lanes: number): number => {
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return (h >>> 0) % lanes;
};

export function createEmbeddedEventLog(deps: EmbeddedLogDeps): EventLog {
  const subscriptions = new Set<LogSubscription>();
  const read = sharedReads(deps.store);
  return {
    async subscribe(group, handler, options = {}) {
      const subscription = subscribeGroup(deps, read, group, handler, options, () => subscriptions.delete(subscription));
      subscriptions.add(subscription);
      return subscription;
    },
    async close() {
      await Promise.all([...subscriptions].map((s) => s.close()));
    },
  };
}

/** Wires one member of the group: the feed dispatches into lanes, settled events move the low-water mark. */
function subscribeGroup(
  deps: EmbeddedLogDeps,
  read: ReadAfter,
  name: string,
  handler: LogHandler,
  options: SubscribeOptions,
  onClosed: () => void,
): LogSubscription {
  const lanes = createLanes(Math.max(1, options.concurrency ?? 4));
  const closing = new AbortController();
  const group = groupOf(deps, name, handler, options, closing.signal);
  const start = deps.store.loadCheckpoint(name) ?? (options.startAt === 'latest' ? deps.store.headPosition() : 0);
  const mark = lowWaterMark(start);
  const checkpoint = checkpointing(deps.store, group, mark, options.beforeCheckpoint);
  let running = true;
  const dispatch = dispatcher(group, lanes, mark);
  const feeding = feed(read, deps.store, start, mark, Math.max(1, options.maxInFlight ?? 512), group.closing, dispatch).catch(
    (err: unknown) => {
      if (!running) return;
      running = false;
      group.log.fatal({ err }, 'subscription can no longer read the event store');
      options.onFatal?.(err instanceof Error ? err : new Error(String(err)));
    },
  );
  const retries = retryingLetters(group, deps.retryPollMs ?? 2000);

  const subscription: LogSubscription = {
    async close() {
      if (closing.signal.aborted) return;
      closing.abort();
      running = false;
      mark.release();
      checkpoint.stop();
      retries.stop();
      await feeding;
      await lanes.drained();
      // Not waiting for `settled`: one that never settles stays uncommitted and is redelivered.
      await checkpoint.save();
      onClosed();
    },
    status: () => ({ group: name, running, lag: lagBehind(deps.store, mark.position()) }),
    onWatermark: mark.onMove,
  };
  group.log.info({ from_position: start, lanes: lanes.count, max_attempts: group.maxAttempts }, 'subscribed');
  return subscription;
}

/** The group's settings; a failing handler is retried after `retryBaseMs`, doubling up to 30 s. */
function groupOf(deps: EmbeddedLogDeps, name: string, handler: LogHandler, options: SubscribeOptions, closing: AbortSignal): Group {
  const retryBaseMs = deps.retryBaseMs ?? 100;
  return {
    name,
    handler,
    log: deps.logger.child({ group: name }),
    deadLetters: deps.deadLetters,
    closing,
    maxAttempts: Math.max(1, options.maxAttempts ?? 5),
    delayOf: (attempt) => Math.min(RETRY_CAP_MS, retryBaseMs * 2 ** Math.min(attempt - 1, 10)),
  };
}

/**
 * Hands each event to its partition key's lane. The lane is freed as soon as the handler took the
 * event on; the event counts towards the low-water mark only once it settled or was dead-lettered.
 */
function dispatcher(group: Group, lanes: Lanes, mark: LowWaterMark): (event: StoredEvent) => void {
  return (event) => {
    const settle = mark.track(Number(event.position));
    lanes.enqueue(String(event.metadata.partition_key ?? event.streamId), (laneFree) => {
      if (group.closing.aborted) return laneFree();
      void deliver(group, event, laneFree).then((ok) => {
        laneFree();
        if (ok) settle();
      });
    });
  };
}

type Lanes = ReturnType<typeof createLanes>;

/** One promise chain per lane: a key's events are handed over one after the other, other lanes go on meanwhile. */
function createLanes(count: number) {
  const tails: Promise<void>[] = Array.from({ length: count }, () => Promise.resolve());
  return {
    count,
    /** Runs `run` once the lane's previous event was taken on; the lane moves on when `run` calls `laneFree`. */
    enqueue(key: string, run: (laneFree: () => void) => void) {
      const lane = laneOf(key, count);
      tails[lane] = tails[lane].then(() => new Promise<void>(run));
    },
    drained: () => Promise.all(tails),
  };
}

/**
 * Reads `$all` from the start position on and dispatches each event in order; pauses while
 * `maxInFlight` events are unsettled, and waits for appends once caught up.
 */
async function feed(
  read: ReadAfter,
  store: SqliteEventStore,
  start: number,
  mark: LowWaterMark,
  maxInFlight: number,
  closing: AbortSignal,
  dispatch: (event: StoredEvent) => void,
): Promise<void> {
  let cursor = start;
  while (!closing.aborted) {
    const batch = await read(cursor);
    for (const event of batch) {
      while (mark.unsettled() >= maxInFlight && !closing.aborted) await mark.moved();
      if (closing.aborted) return;
      dispatch(event);
      cursor = Number(event.position);
    }
    if (batch.length === 0) await store.waitForAppend(100);
  }
}

type ReadAfter = (position: number) => Promise<readonly StoredEvent[]>;

const READ_BATCH = 256;
/** Batches kept for the other groups: one per group that can be at a different place. */
const KEPT_BATCHES = 16;

/**
 * The groups of one process read `$all` together: woken by the same append, they ask for the
 * events after the same position, one after the other. The first reads and parses them; the
 * others get that batch (the jobs worker's four groups read each event once, not four times).
 * A batch read after a position stays right: events are only ever added after the head, in
 * order, so it is a prefix of what is there now, and a group that got it reads on from its end.
 * An empty read is never kept (an append may come at any moment). The events are shared between
 * the groups' handlers, which only read them.
 */
function sharedReads(store: SqliteEventStore): ReadAfter {
  const kept = new Map<number, Promise<readonly StoredEvent[]>>();
  return (position) => {
    const hit = kept.get(position);
    if (hit) return hit;
    const reading = store.readAll(String(position), READ_BATCH);
    kept.set(position, reading);
    if (kept.size > KEPT_BATCHES) kept.delete(kept.keys().next().value!);
    void reading.then(
      (events) => events.length === 0 && kept.get(position) === reading && kept.delete(position),
      () => kept.get(position) === reading && kept.delete(position),
    );
    return reading;
  };
}

/** Events in the store after the mark; null when the store cannot say. */
function lagBehind(store: SqliteEventStore, committed: number): number | null {
  try {
    return Math.max(0, store.headPosition() - committed);
  } catch {
    return null;
  }
}
