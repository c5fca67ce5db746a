import { LRUCache } from 'lru-cache';
import { positionValue, type AppendResult, type EventStore } from '../ports/event-store';

/**
 * Read-your-writes and causal reads (DESIGN §8; the mechanism is in docs/decisions.md,
 * "Read-your-writes"). Every append has a position in `$all`; the projector's consumer group
 * commits a low-water mark, the newest position before which every event has been applied to
 * every read model (the **watermark**). Then:
 * - the command side notes, per token, the position of the last write a 2xx answered for;
 * - the query side, before it reads for that token, waits until the watermark has passed it
 *   (bounded: an answer that waited `timeoutMs` is served as it is, and counted);
 * - a job document in a final state carries the position of the event that ended it, and is
 *   shown (by GET, list or webhook) only once the watermark has passed it: its effects were
 *   appended before it, so every read model already shows them.
 */

export { positionValue };

/** How far the read models have projected `$all`, and a way to wait for a position. */
export interface Watermark {
  /** Every event at or before this has been projected (null: nothing known yet). */
  current(): bigint | null;
  /** True once every event at or before `position` has been projected. */
  passed(position: bigint): boolean;
  /** Resolves true once `position` is passed, or false after `timeoutMs`. */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean>;
  /** How often the watermark moved: the query side's read snapshot starts again when it has. */
  moves(): number;
  /**
   * Calls `listener` after each move until the returned function is called (the job event
   * streams are woken by it, lib/app/job-watch.ts). Optional: a watermark nobody streams from
   * need not offer it.
   */
  onMove?(listener: () => void): () => void;
}

export interface WatermarkSource extends Watermark {
  /** The projector reports a new low-water mark (older or equal ones change nothing). */
  advance(position: bigint): void;
  onMove(listener: () => void): () => void;
}

type Waiter = { readonly position: bigint; readonly resolve: (passed: boolean) => void; readonly timer: NodeJS.Timeout };

export function createWatermark(initial: bigint | null = null): WatermarkSource {
  let mark = initial;
  let moves = 0;
  // Few at a time (reads that arrived while their write was being projected): a list is enough.
  let waiters: Waiter[] = [];
  const listeners = new Set<() => void>();
  const passed = (position: bigint) => mark !== null && mark >= position;
  return {
    current: () => mark,
    passed,
    moves: () => moves,
    onMove(listener) {
      // Wrapped: the same function listening twice is two listeners.
      const entry = () => listener();
      listeners.add(entry);
      return () => void listeners.delete(entry);
    },
    advance(position) {
      if (mark !== null && position <= mark) return;
      mark = position;
      moves += 1;
      for (const listener of listeners) listener();
      if (waiters.length === 0) return;
      const still: Waiter[] = [];
      for (const w of waiters) {
        if (position >= w.position) {
          clearTimeout(w.timer);
          w.resolve(true);
        } else still.push(w);
      }
      waiters = still;
    },
    waitFor(position, timeoutMs) {
      if (passed(position)) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w.timer !== timer);
          resolve(false);
        }, timeoutMs);
        waiters.push({ position, resolve, timer });
      });
    },
  };
}

/** Tokens whose last write is remembered; the least recently writing go first (their writes are long projected). */
const REMEMBERED_TOKENS = 100_000;

/**
 * What the command side noted and the query side waits for, per token. In one process a map
 * (synchronous: the common read costs no promise); across processes the read store
 * (lib/app/shared-consistency.ts), whose answers a 2xx and a read then wait for.
 */
export interface SessionPositions {
  /** The position of a write a 2xx is answering for (kept only if newer than the last). */
  wrote(tokenId: string, position: bigint): void | Promise<void>;
  /** The position of the token's last noted write, if any. */
  lastWrite(tokenId: string): bigint | undefined | Promise<bigint | undefined>;
}

export function createSessionPositions(capacity = REMEMBERED_TOKENS): SessionPositions {
  const last = new LRUCache<string, bigint>({ max: capacity });
  return {
    wrote(tokenId, position) {
      const before = last.get(tokenId);
      if (before === undefined || position > before) last.set(tokenId, position);
    },
    lastWrite: (tokenId) => last.get(tokenId),
  };
}

/** The read side's half: how long a read may wait for its token's writes to be projected. */
export const READ_FENCE_TIMEOUT_MS = 2_000;

export type ReadFenceOutcome = 'none' | 'passed' | 'waited' | 'timed_out';

/**
 * The hooks the two HTTP apps call: `afterWrite` once a command answered 2xx, `beforeRead`
 * before a read is answered. `beforeRead` returns nothing when no wait is needed (the common
 * case costs a map look-up and no promise).
 */
export interface ReadYourWrites {
  /** A promise when the position is noted elsewhere: the 2xx waits for it. */
  afterWrite(tokenId: string): void | Promise<void>;
  beforeRead(tokenId: string): Promise<ReadFenceOutcome> | undefined;
  /** Waits until a position (a final job state's) is projected; nothing when it already is. */
  until(position: bigint): Promise<ReadFenceOutcome> | undefined;
}

export function readYourWrites(deps: {
  sessions: SessionPositions;
  watermark: Watermark;
  /** The position of the newest append this process made (the store adapter tracks it). */
  lastAppended: () => bigint | null;
  timeoutMs?: number;
  /** Told of every read that had to wait, and how (metrics). */
  observe?: (outcome: ReadFenceOutcome, seconds: number) => void;
}): ReadYourWrites {
  const timeoutMs = deps.timeoutMs ?? READ_FENCE_TIMEOUT_MS;
  const until = (position: bigint): Promise<ReadFenceOutcome> | undefined => {
    if (deps.watermark.passed(position)) return undefined;
    const started = performance.now();
    return deps.watermark.waitFor(position, timeoutMs).then((passed) => {
      const outcome = passed ? 'waited' : 'timed_out';
      deps.observe?.(outcome, (performance.now() - started) / 1000);
      return outcome;
    });
  };
  return {
    // The newest append of this process is at or after the one this 2xx answers for: waiting
    // for it may wait a little longer than needed, never too short.
    afterWrite(tokenId) {
      const position = deps.lastAppended();
      return position === null ? undefined : deps.sessions.wrote(tokenId, position);
    },
    beforeRead(tokenId) {
      const position = deps.sessions.lastWrite(tokenId);
      if (position instanceof Promise) return position.then((p) => (p === undefined ? 'none' : (until(p) ?? 'passed')));
      return position === undefined ? undefined : until(position);
    },
    until,
  };
}

/**
 * The store, noting the position of the newest append made through it: what `afterWrite` notes
 * for a command's token; `onAppend` is told of each (the all-in-one worker is woken with it).
 * Everything else is the store's own (the rest of its interface too).
 */
export function trackAppends<S extends EventStore>(store: S, onAppend?: () => void): S & { lastAppended(): bigint | null } {
  let last: bigint | null = null;
  const note = (result: AppendResult) => {
    if (!result.ok) return;
    const position = positionValue(result.position);
    if (last === null || position > last) last = position;
    onAppend?.();
  };
  const tracked = Object.create(store) as S & { lastAppended(): bigint | null };
  tracked.append = async (streamId, events, expected) => {
    const result = await store.append(streamId, events, expected);
    note(result);
    return result;
  };
  const inOrder = store.appendInOrder?.bind(store);
  if (inOrder) {
    tracked.appendInOrder = async (appends) => {
      const results = await inOrder(appends);
      results.forEach(note);
      return results;
    };
  }
  const all = store.appendAll?.bind(store);
  if (all) {
    tracked.appendAll = async (appends) => {
      const outcome = await all(appends);
      if (outcome.ok) outcome.results.forEach(note);
      return outcome;
    };
  }
  tracked.lastAppended = () => last;
  return tracked;
}
