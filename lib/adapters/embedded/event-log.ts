import type { Logger } from 'pino';
import { eventLetter, putUntilStored, reasonOf } from '../../app/dead-letters';
import type { DeadLetterStore } from '../../ports/dead-letters';
import type { EventLog, LogHandler, LogSubscription, SubscribeOptions } from '../../ports/event-log';
import type { StoredEvent } from '../../ports/event-store';
import type { SqliteEventStore } from './event-store';

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

const CHECKPOINT_EVERY_MS = 200;
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

  async function subscribe(group: string, handler: LogHandler, options: SubscribeOptions = {}): Promise<LogSubscription> {
    const lanes = Math.max(1, options.concurrency ?? 4);
    const maxAttempts = Math.max(1, options.maxAttempts ?? 5);
    const maxInFlight = Math.max(1, options.maxInFlight ?? 512);
    const log = deps.logger.child({ group });
    const saved = deps.store.loadCheckpoint(group);
    const start = saved ?? (options.startAt === 'latest' ? deps.store.headPosition() : 0);
    let closed = false;
    const closing = new AbortController();
    let running = true;
    // Dispatched events in position order, with whether they have settled.
    const inFlight: { position: number; done: boolean }[] = [];
    const laneTails: Promise<void>[] = Array.from({ length: lanes }, () => Promise.resolve());
    let committed = start;
    let slotFreed: () => void = () => undefined;
    const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
    const delayOf = (attempt: number) => Math.min(RETRY_CAP_MS, (deps.retryBaseMs ?? 100) * 2 ** Math.min(attempt - 1, 10));

    const giveUp = async (event: StoredEvent, err: unknown, attempts: number) => {
      const reason = reasonOf(err);
      log.error({ err, event_id: event.id, type: event.type, stream: event.streamId, attempts }, 'event dead-lettered');
      await putUntilStored(deps.deadLetters, eventLetter(group, event, reason, attempts), {
        log,
        signal: closing.signal,
        delayOf,
      });
    };

    /**
     * Tries the event until it settles or is dead-lettered. The lane waits only for the handler's
     * own call; a `settled` promise is awaited off the lane. Resolves false if the subscription
     * closed first (the event then stays uncommitted).
     */
    const deliver = async (event: StoredEvent, onTaken: () => void): Promise<boolean> => {
      let taken = false;
      const take = () => {
        if (taken) return;
        taken = true;
        onTaken();
      };
      for (let attempt = 1; !closed; attempt++) {
        try {
          const outcome = await handler(event, { heartbeat: async () => undefined });
          take();
          if (outcome?.settled) await outcome.settled;
          return true;
        } catch (err) {
          if (closed) return false;
          if (attempt >= maxAttempts) {
            await giveUp(event, err, attempt);
            take();
            return !closed;
          }
          log.warn({ err, event_id: event.id, type: event.type, attempt, retry_in_ms: delayOf(attempt) }, 'handler failed; will retry');
          await sleep(delayOf(attempt));
        }
      }
      return false;
    };

    const watermarkListeners: ((position: bigint) => void)[] = [];
    const advance = () => {
      let moved = false;
      while (inFlight.length > 0 && inFlight[0].done) {
        committed = inFlight.shift()!.position;
        moved = true;
      }
      if (!moved) return;
      slotFreed();
      for (const listener of watermarkListeners) listener(BigInt(committed));
    };

    let lastSaved = start;
    const saveCheckpoint = () => {
      if (committed === lastSaved) return;
      try {
        deps.store.saveCheckpoint(group, committed);
        lastSaved = committed;
      } catch (err) {
        log.warn({ err }, 'checkpoint save failed; will retry'); // the events are redelivered at worst
      }
    };
    const checkpointTimer = setInterval(saveCheckpoint, CHECKPOINT_EVERY_MS);

    const dispatch = (event: StoredEvent) => {
      const entry = { position: Number(event.position), done: false };
      inFlight.push(entry);
      const lane = laneOf(String(event.metadata.partition_key ?? event.streamId), lanes);
      laneTails[lane] = laneTails[lane].then(
        () =>
          new Promise<void>((laneFree) => {
            if (closed) return laneFree();
            void deliver(event, laneFree).then((ok) => {
              laneFree();
              if (!ok) return;
              entry.done = true;
              advance();
            });
          }),
      );
    };

    const fail = (err: Error) => {
      if (!running) return;
      running = false;
      log.fatal({ err }, 'subscription can no longer read the event store');
      options.onFatal?.(err);
    };

    const feed = (async () => {
      let cursor = start;
      while (!closed) {
        const batch = await deps.store.readAll(String(cursor), 256);
        for (const event of batch) {
          while (inFlight.length >= maxInFlight && !closed) await new Promise<void>((resolve) => (slotFreed = resolve));
          if (closed) return;
          dispatch(event);
          cursor = Number(event.position);
        }
        if (batch.length === 0) await deps.store.waitForAppend(100);
      }
    })().catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))));

    // Letters an operator marked for retry are handled again here, outside the checkpoint.
    const retryTimer = setInterval(() => void retryLetters(), deps.retryPollMs ?? 2000);
    let retrying = false;
    const retryLetters = async () => {
      if (retrying || closed) return;
      retrying = true;
      try {
        for (const letter of await deps.deadLetters.dueRetries(group, 10)) {
          if (closed) return;
          try {
            const event = JSON.parse(letter.payload) as StoredEvent;
            const outcome = await handler(event, { heartbeat: async () => undefined });
            if (outcome?.settled) await outcome.settled;
            await deps.deadLetters.remove(letter.id);
            log.info({ letter: letter.id, event_id: letter.event_id }, 'dead letter retried successfully');
          } catch (err) {
            await deps.deadLetters.markDead(letter.id, reasonOf(err));
            log.error({ err, letter: letter.id }, 'dead letter failed again');
          }
        }
      } catch (err) {
        log.warn({ err }, 'could not read dead letters');
      } finally {
        retrying = false;
      }
    };

    const subscription: LogSubscription = {
      async close() {
        if (closed) return;
        closed = true;
        closing.abort();
        running = false;
        slotFreed();
        clearInterval(checkpointTimer);
        clearInterval(retryTimer);
        await feed;
        await Promise.all(laneTails);
        // Not waiting for `settled`: one that never settles stays uncommitted and is redelivered.
        saveCheckpoint();
        subscriptions.delete(subscription);
      },
      status() {
        let head: number | null;
        try {
          head = deps.store.headPosition();
        } catch {
          head = null;
        }
        return { group, running, lag: head === null ? null : Math.max(0, head - committed) };
      },
      onWatermark(listener) {
        watermarkListeners.push(listener);
        listener(BigInt(committed));
      },
    };
    subscriptions.add(subscription);
    log.info({ from_position: start, lanes, max_attempts: maxAttempts }, 'subscribed');
    return subscription;
  }

  return {
    subscribe,
    async close() {
      await Promise.all([...subscriptions].map((s) => s.close()));
    },
  };
}
