import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { LogSubscription, PartitionMark } from '../ports/event-log';
import type { ReadQueries, ReadStore } from '../ports/read-store';
import { createWatermark, type SessionPositions, type Watermark } from './consistency';

/**
 * Read-your-writes across processes (docs/decisions.md, "Read-your-writes across replicas"): the
 * compose deployment's command-api and query-api replicas, and its webhook dispatcher, are
 * separate processes, and each query-api replica's projector holds some of the topic's
 * partitions only. What one process knows the others read from the read store, which they all
 * share:
 * - `projection_marks`: per partition of the projector group, the store position every event of
 *   that partition up to has been projected (the members record them as they reach them); the
 *   group's watermark is the least over all partitions, known once every partition has one;
 * - `session_positions`: per token, the position of the last write a 2xx answered for (the
 *   command API records it before it answers).
 * Both only rise: a position, once reached or written, stays true, so a record from a member that
 * since lost its partition, or from a replica a little behind, is never taken back.
 * Neither is a read model: replay leaves them alone, and a fresh read store starts them again.
 */

export const PROJECTION_MARKS = 'projection_marks';
export const SESSION_POSITIONS = 'session_positions';

/** Tries of a compare-and-set before giving up (each failure means someone else raised it meanwhile). */
const RAISE_TRIES = 20;
/** Tokens whose last recorded write this process remembers (the least recently writing go first). */
const REMEMBERED_TOKENS = 100_000;

type Known = { readonly rev: number; readonly position: bigint };

/**
 * Sets `position` on document `id` unless it already holds one as high; other fields are written
 * with it. `known`: what this process last read or wrote there, if anything; the first put is
 * tried on it without reading (the common case: nobody else wrote since), and read again only
 * when it was stale. Resolves to what the document holds now, as far as this process knows.
 */
async function raise(
  store: ReadStore,
  collection: string,
  id: string,
  position: bigint,
  fields: Record<string, unknown>,
  known?: Known,
): Promise<Known> {
  let doc: Known | null | undefined = known;
  for (let attempt = 0; attempt < RAISE_TRIES; attempt++) {
    if (doc === undefined) {
      const stored = await store.get(collection, id);
      doc = stored && { rev: stored._rev, position: BigInt(String(stored.position)) };
    }
    if (doc && doc.position >= position) return doc;
    const rev = (doc?.rev ?? 0) + 1;
    const outcome = await store.put(collection, { ...fields, _id: id, _rev: rev, position: position.toString() }, doc ? doc.rev : null);
    if (outcome === 'written') return { rev, position };
    doc = undefined;
  }
  throw new Error(`${collection}/${id}: still raced after ${RAISE_TRIES} tries`);
}

// ---------------------------------------------------------------- projector members

/**
 * Records the partition marks a projector member reaches (`LogSubscription.onPartitionMark`), or,
 * on a log without partitions, its watermark as the mark of partition 0 of 1. Writes are
 * coalesced: while one round is being written, newer marks wait and the latest of each partition
 * goes in the next round, so a busy member writes as often as the read store answers, no more.
 */
export function recordProjectionMarks(deps: {
  store: ReadStore;
  group: string;
  subscription: LogSubscription;
  log: Logger;
  /** Wait before a round that failed is tried again (the read store is down). */
  retryMs?: number;
}): { stop(): void; idle(): Promise<void> } {
  const pending = new Map<number, PartitionMark>();
  let round: Promise<void> | null = null;
  let stopped = false;
  const retryMs = deps.retryMs ?? 500;
  const writeRound = async (): Promise<void> => {
    while (pending.size > 0 && !stopped) {
      const marks = [...pending.values()];
      pending.clear();
      try {
        await Promise.all(
          marks.map((m) => raise(deps.store, PROJECTION_MARKS, `${deps.group}/${m.partition}`, m.position, markFields(deps.group, m))),
        );
      } catch (err) {
        deps.log.warn({ err, group: deps.group }, 'projection marks not recorded; trying again');
        for (const m of marks) if (!pending.has(m.partition)) pending.set(m.partition, m);
        await new Promise((resolve) => setTimeout(resolve, retryMs).unref());
      }
    }
  };
  const reached = (mark: PartitionMark) => {
    const before = pending.get(mark.partition);
    if (before && before.position >= mark.position) return;
    pending.set(mark.partition, mark);
    round ??= writeRound().finally(() => (round = null));
  };
  if (deps.subscription.onPartitionMark) deps.subscription.onPartitionMark(reached);
  else deps.subscription.onWatermark?.((position) => reached({ partition: 0, position, partitions: 1 }));
  return {
    stop: () => void (stopped = true),
    idle: async () => {
      while (round) await round;
    },
  };
}

const markFields = (group: string, m: PartitionMark) => ({ group, partition: m.partition, partitions: m.partitions });

/**
 * The group's watermark from the recorded marks: the least over its partitions, null until each
 * has one. How many partitions there are is what the newest mark says: records of partitions a
 * topic no longer has (a new topic with fewer) are left out, rather than holding the mark back.
 */
export function leastMark(docs: readonly Record<string, unknown>[]): bigint | null {
  if (docs.length === 0) return null;
  const newest = docs.reduce((a, b) => (BigInt(String(b.position)) > BigInt(String(a.position)) ? b : a));
  const partitions = Number(newest.partitions);
  if (!(partitions > 0)) return null;
  const reached = new Map(docs.map((d) => [Number(d.partition), BigInt(String(d.position))]));
  let least: bigint | null = null;
  for (let p = 0; p < partitions; p++) {
    const at = reached.get(p);
    if (at === undefined) return null;
    if (least === null || at < least) least = at;
  }
  return least;
}

// ---------------------------------------------------------------- readers

/**
 * While a read waits, marks are read this often; while job event streams listen for moves
 * (`onMove`), this often (their clients should see a change within 100 ms); otherwise now and
 * then, to keep `passed` fresh.
 */
const WAITING_POLL_MS = 10;
const LISTENED_POLL_MS = 25;
const IDLE_POLL_MS = 250;

/**
 * The projector group's watermark as a reader in any process sees it: the marks its members
 * recorded, read again every `idlePollMs`, and every `waitingPollMs` while a read waits.
 */
export function sharedWatermark(deps: {
  queries: ReadQueries;
  group: string;
  log: Logger;
  waitingPollMs?: number;
  listenedPollMs?: number;
  idlePollMs?: number;
}): Watermark & { stop(): void; refresh(): Promise<void> } {
  const source = createWatermark();
  let waiting = 0;
  let listened = 0;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  let reading: Promise<void> | null = null;
  const refresh = () =>
    (reading ??= deps.queries
      .find(PROJECTION_MARKS, { group: deps.group })
      .then((docs) => {
        const least = leastMark(docs);
        if (least !== null) source.advance(least);
      })
      .catch((err: unknown) => deps.log.warn({ err, group: deps.group }, 'projection marks not readable'))
      .finally(() => (reading = null)));
  const schedule = () => {
    if (timer) clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => void refresh().finally(schedule), pollMs());
    timer.unref();
  };
  const pollMs = () => {
    if (waiting > 0) return deps.waitingPollMs ?? WAITING_POLL_MS;
    if (listened > 0) return deps.listenedPollMs ?? LISTENED_POLL_MS;
    return deps.idlePollMs ?? IDLE_POLL_MS;
  };
  const hurry = () => void refresh().finally(schedule);
  schedule();
  return {
    current: source.current,
    passed: source.passed,
    moves: source.moves,
    refresh,
    waitFor(position, timeoutMs) {
      if (source.passed(position)) return Promise.resolve(true);
      waiting += 1;
      if (waiting === 1) hurry();
      return source.waitFor(position, timeoutMs).finally(() => (waiting -= 1));
    },
    onMove(listener) {
      const stop = source.onMove(listener);
      listened += 1;
      if (listened === 1) hurry();
      let stopped = false;
      return () => {
        if (stopped) return;
        stopped = true;
        listened -= 1;
        stop();
      };
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/**
 * Per-token write positions in the read store, for command and query processes apart. A position
 * that cannot be recorded (the read store is down) is logged and the 2xx still goes out: the
 * command was done, and answering 5xx would have the client do it again.
 *
 * Writes are coalesced per token: the 2xx of one group commit (50 concurrent imports of one client)
 * all note their positions in the same turn of the event loop, and one record of the highest
 * covers them all. Each still waits until a position at least its own is recorded. Without this,
 * each wrote its own record, and all but one lost the compare-and-set and read and wrote again.
 */
export function sharedSessionPositions(store: ReadStore, log: Logger, capacity = REMEMBERED_TOKENS): SessionPositions {
  // What this process last wrote per token: its next write puts without reading first.
  const known = new LRUCache<string, Known>({ max: capacity });
  const rounds = new Map<string, TokenRound>();

  const record = async (tokenId: string, round: TokenRound): Promise<void> => {
    // The rest of this turn's 2xx join the round first.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (round.waiters.length > 0) {
      const waiters = round.waiters.splice(0);
      const highest = waiters.reduce((max, w) => (w.position > max ? w.position : max), waiters[0].position);
      try {
        known.set(tokenId, await raise(store, SESSION_POSITIONS, tokenId, highest, {}, known.get(tokenId)));
      } catch (err) {
        known.delete(tokenId);
        log.warn({ err, token_id: tokenId }, 'write position not recorded: the next read may not wait for this write');
      }
      for (const w of waiters) w.done();
    }
    rounds.delete(tokenId);
  };

  return {
    wrote: (tokenId, position) => {
      const recorded = known.get(tokenId);
      if (recorded && recorded.position >= position) return;
      return new Promise<void>((done) => {
        let round = rounds.get(tokenId);
        if (!round) {
          round = { waiters: [] };
          rounds.set(tokenId, round);
          void record(tokenId, round);
        }
        round.waiters.push({ position, done });
      });
    },
    lastWrite: readsPerTurn(store),
  };
}

/**
 * A token's last recorded write position, read once per turn of the event loop for every read
 * request of that turn: one query, made after the turn's requests all arrived, sees every write
 * any of them could need (each was recorded before its 2xx went out, so before the read was
 * sent). A query per request cost the job poll a tenth of its time (a read transaction's locks).
 */
function readsPerTurn(store: ReadQueries): (tokenId: string) => Promise<bigint | undefined> {
  let waiting: Map<string, { resolve: (p: bigint | undefined) => void; reject: (err: unknown) => void }[]> | null = null;
  const read = async (tokens: Map<string, unknown>): Promise<Map<string, bigint>> => {
    const ids = [...tokens.keys()];
    const docs = ids.length === 1 ? [await store.get(SESSION_POSITIONS, ids[0])] : await store.getMany(SESSION_POSITIONS, ids);
    return new Map(docs.flatMap((d) => (d ? [[d._id, BigInt(String(d.position))] as const] : [])));
  };
  const answer = () => {
    const turn = waiting!;
    waiting = null;
    read(turn).then(
      (positions) => turn.forEach((readers, id) => readers.forEach((r) => r.resolve(positions.get(id)))),
      (err: unknown) => turn.forEach((readers) => readers.forEach((r) => r.reject(err))),
    );
  };
  return (tokenId) =>
    new Promise((resolve, reject) => {
      if (!waiting) {
        waiting = new Map();
        setImmediate(answer);
      }
      const readers = waiting.get(tokenId);
      if (readers) readers.push({ resolve, reject });
      else waiting.set(tokenId, [{ resolve, reject }]);
    });
}

/** A token's positions waiting to be recorded, and who waits for them. */
type TokenRound = { readonly waiters: { readonly position: bigint; readonly done: () => void }[] };
