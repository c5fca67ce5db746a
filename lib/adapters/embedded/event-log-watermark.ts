import type { Group } from './event-log-delivery';
import type { SqliteEventStore } from './event-store';

const CHECKPOINT_EVERY_MS = 200;

export type LowWaterMark = ReturnType<typeof lowWaterMark>;

/**
 * The newest position before which every dispatched event has settled: what the checkpoint saves
 * (a crash redelivers only what lies after it) and what read-your-writes waits on. Listeners get
 * it each time it moves, and the current one on registration.
 */
export function lowWaterMark(start: number) {
  // Dispatched events in position order, with whether they have settled.
  const inFlight: { position: number; done: boolean }[] = [];
  const listeners: ((position: bigint) => void)[] = [];
  let committed = start;
  let slotFreed: () => void = () => undefined;

  // Settled entries before `head` are dropped in chunks: shift() on a deep backlog (a job type
  // keeps up to 100,000 in flight) moves the whole array every time.
  let head = 0;
  const advance = () => {
    let moved = false;
    while (head < inFlight.length && inFlight[head].done) {
      committed = inFlight[head++].position;
      moved = true;
    }
    if (head > 1024 && head * 2 > inFlight.length) {
      inFlight.splice(0, head);
      head = 0;
    }
    if (!moved) return;
    slotFreed();
    for (const listener of listeners) listener(BigInt(committed));
  };
  return {
    position: () => committed,
    unsettled: () => inFlight.length - head,
    /** Notes a dispatched event; call the function returned once it has settled. */
    track(position: number): () => void {
      const entry = { position, done: false };
      inFlight.push(entry);
      return () => {
        entry.done = true;
        advance();
      };
    },
    /** Resolves when the mark next moves (a slot is free), or on `release`. */
    moved: () => new Promise<void>((resolve) => (slotFreed = resolve)),
    release: () => slotFreed(),
    onMove(listener: (position: bigint) => void) {
      listeners.push(listener);
      listener(BigInt(committed));
    },
  };
}

/**
 * Saved every 200 ms when the mark moved, not per event: a crash then redelivers, besides what had
 * not settled, at most what settled since the last save (handlers are idempotent). Before each
 * save, `beforeCheckpoint` makes what the handlers wrote up to the mark durable (the projector's
 * read store acknowledges writes before they reach the disk): the position read before it is the
 * one saved after it, so a power cut cannot leave the checkpoint past documents it lost.
 */
export function checkpointing(store: SqliteEventStore, group: Group, mark: LowWaterMark, beforeCheckpoint?: () => Promise<void>) {
  let lastSaved = mark.position();
  let saving: Promise<void> | null = null;
  const saveOnce = async () => {
    const committed = mark.position();
    if (committed === lastSaved) return;
    try {
      await beforeCheckpoint?.();
      store.saveCheckpoint(group.name, committed);
      lastSaved = committed;
    } catch (err) {
      group.log.warn({ err }, 'checkpoint save failed; will retry'); // the events are redelivered at worst
    }
  };
  /** Saves the mark as it is now, after any save in progress (saves never overlap). */
  const save = (): Promise<void> => {
    const next: Promise<void> = (saving ?? Promise.resolve()).then(saveOnce).finally(() => {
      if (saving === next) saving = null;
    });
    saving = next;
    return next;
  };
  const timer = setInterval(() => {
    if (!saving) void save();
  }, CHECKPOINT_EVERY_MS);
  return { save, stop: () => clearInterval(timer) };
}
