import { setTimeout as sleep } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import type { Decider, SnapshotCodec } from '../domain/decider';
import type { SnapshotStore } from './snapshots';
import { AppError, isRejection } from '../domain/errors';
import type { AppendResult, EventMetadata, EventStore, NewEvent, StoredEvent, StreamAppend } from '../ports/event-store';

/**
 * Command handling, always the same way (STYLE §3): read the stream, fold it, decide, append
 * with the expected revision. A conflict means someone else wrote in between: read again and
 * decide again, a few times, then give up with a retriable error.
 *
 * A handler (`commandHandler`, one per store and stream kind) folds only what it has not folded
 * before: it keeps the states of the streams it read lately with their revision, and a later read
 * of the stream fetches the events after it. Without that a running job's watcher folded the job's whole stream every 500 ms, and every
 * import into a project folded the project's whole history: work that grew with each event. A
 * stream only ever grows, so a kept state plus the events after it is the state a whole read
 * would fold. A handler given snapshots (balances) starts from the stream's snapshot when it has
 * no fold of its own, and keeps one every thousand events (lib/app/snapshots.ts). Only states
 * folded from stored events are kept, never one a command meant to append, and a state is shared
 * by its readers: folds return new objects (evolve is pure) and nobody changes a state they were
 * given.
 */

export type HandleResult<E, S> = { readonly events: E[]; readonly state: S; readonly revision: number | null };

/** A stream's folded state and its last event's revision (null: no stream), to append after it. */
export type Loaded<S> = { readonly state: S; readonly revision: number | null };

export type HandleOptions<S> = {
  newId: () => string;
  /** Fixed, or derived from the folded state (e.g. a job's project id as partition key). */
  metadata: EventMetadata | ((state: S) => EventMetadata);
  /** Runs on the folded state before deciding: throw to refuse (e.g. another drive's resource). */
  check?: (state: S) => void;
  maxAttempts?: number;
  /**
   * How long to wait before attempt `attempt + 1` after a conflict (none unless given): a stream
   * that other processes write too is retried with backoff and jitter, not at once.
   */
  retryDelayMs?: (attempt: number) => number;
  /**
   * The stream was just named with a fresh UUID, so it is almost surely empty: the first try
   * decides on the initial state without reading and appends with `no_stream` (a conflict then
   * falls back to reading, as usual). Saves a read on the accept path.
   */
  expectNew?: boolean;
};

/** One stream kind's commands on one store, addressed by the id in the stream's name. */
export interface CommandHandler<C, E extends { type: string; data: object }, S> {
  /** Read, fold, decide, append with the expected revision; a conflict reads and decides again. */
  handle(id: string, command: C, options: HandleOptions<S>): Promise<HandleResult<E, S>>;
  /** Reads and folds the stream without deciding anything. */
  load(id: string): Promise<Loaded<S>>;
}

/** The handler type of a decider: `HandlerOf<typeof jobDecider>`. */
export type HandlerOf<D> = D extends Decider<infer C, infer E, infer S> ? CommandHandler<C, E, S> : never;

export const foldStream = <E, S>(events: readonly StoredEvent[], evolve: (s: S, e: E) => S, initial: S): S =>
  events.reduce((s, e) => evolve(s, { type: e.type, data: e.data } as unknown as E), initial);

/** Streams whose folded state a handler keeps (the least recently read go first). */
const KEPT_FOLDS = 1000;

/** The revision of the stream's last snapshot known to this handler (-1: none). */
type Folded = { readonly state: unknown; readonly revision: number; readonly snapshotAt: number };

/** A stream kind whose folds are kept as snapshots too (lib/app/snapshots.ts): read from one when a fold is not at hand. */
export type SnapshotOptions<S> = {
  readonly store: SnapshotStore;
  readonly codec: SnapshotCodec<S>;
  /** Events folded past the last snapshot before the next is kept (1,000 unless told). */
  readonly every?: number;
};

const SNAPSHOT_EVERY = 1000;

/**
 * The handler of the streams `streamOf(id)` on `store`, decided by `decider`: built once per
 * store and stream kind where the store is wired (`const jobs = commandHandler(store, jobDecider,
 * streams.job)`), as it keeps the folded states of the streams it read lately.
 */
export function commandHandler<C, E extends { type: string; data: object }, S>(
  store: EventStore,
  decider: Decider<C, E, S>,
  streamOf: (id: string) => string,
  snapshots?: SnapshotOptions<S>,
): CommandHandler<C, E, S> {
  const kept: Kept<S> = { folds: new LRUCache<string, Folded>({ max: KEPT_FOLDS }), snapshots };
  return {
    handle: (id, command, options) => decideAndAppend(store, streamOf(id), decider, command, options, kept),
    load: (id) => readFolded(store, streamOf(id), decider, kept),
  };
}

/**
 * One command on one stream, reading it whole: for one-off uses (the admin CLI, tests) where no
 * handler is kept; a service uses its `commandHandler`.
 */
export function handleCommand<C, E extends { type: string; data: object }, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C,
  options: HandleOptions<S>,
): Promise<HandleResult<E, S>> {
  return decideAndAppend(store, streamId, decider, command, options, null);
}

async function decideAndAppend<C, E extends { type: string; data: object }, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C,
  deps: HandleOptions<S>,
  kept: Kept<S> | null,
): Promise<HandleResult<E, S>> {
  const maxAttempts = deps.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const { state, revision } =
      attempt === 1 && deps.expectNew
        ? { state: decider.initialState(), revision: null }
        : await readFolded(store, streamId, decider, kept);
    deps.check?.(state);
    const decided = decider.decide(command, state);
    if (isRejection(decided)) throw decided.error;
    if (decided.length === 0) return { events: [], state, revision };
    const metadata = typeof deps.metadata === 'function' ? deps.metadata(state) : deps.metadata;
    const toAppend = toNewEvents(decided, deps.newId, metadata);
    const result = await store.append(streamId, toAppend, revision === null ? 'no_stream' : revision);
    if (result.ok) {
      const next = decided.reduce(decider.evolve, state);
      return { events: decided, state: next, revision: result.nextRevision };
    }
    if (attempt >= maxAttempts) {
      throw new AppError('unavailable', `too many concurrent changes to ${streamId}; try again`, { retriable: true });
    }
    const delay = deps.retryDelayMs?.(attempt) ?? 0;
    if (delay > 0) await sleep(delay);
  }
}

const toNewEvents = (decided: readonly { type: string; data: object }[], newId: () => string, metadata: EventMetadata): NewEvent[] =>
  decided.map((e) => ({ id: newId(), type: e.type, data: e.data as Record<string, unknown>, metadata }));

/**
 * What `command` makes of a stream named a moment ago with a fresh UUID, decided on the initial
 * state without reading it: the append for `appendInOrder`, expecting no stream.
 */
export function decideNew<C, E extends { type: string; data: object }, S>(
  streamId: string,
  decider: Decider<C, E, S>,
  command: C,
  deps: { newId: () => string; metadata: EventMetadata },
): StreamAppend {
  return decideAt(streamId, decider, decider.initialState(), null, command, deps);
}

/**
 * What `command` makes of a stream in the state read at `revision` (null: no stream): the append
 * for `appendInOrder`, expecting that revision, so that it fails if the stream moved since.
 * A command that decides nothing has no append: that is the caller's mistake.
 */
export function decideAt<C, E extends { type: string; data: object }, S>(
  streamId: string,
  decider: Decider<C, E, S>,
  state: S,
  revision: number | null,
  command: C,
  deps: { newId: () => string; metadata: EventMetadata },
): StreamAppend {
  const decided = decider.decide(command, state);
  if (isRejection(decided)) throw decided.error;
  if (decided.length === 0) throw new Error(`decideAt: the command decides nothing on ${streamId}`);
  return { streamId, events: toNewEvents(decided, deps.newId, deps.metadata), expected: revision === null ? 'no_stream' : revision };
}

/**
 * What `command` makes of a stream read in `state` at `revision` (null: no stream): the state
 * and revision after it, and its append for `appendInOrder` (none when it decides nothing), so
 * that several commands can be decided one after the other before one commit. A refusal throws.
 */
export function decideNext<C, E extends { type: string; data: object }, S>(
  streamId: string,
  decider: Decider<C, E, S>,
  state: S,
  revision: number | null,
  command: C,
  deps: { newId: () => string; metadata: EventMetadata },
): { state: S; revision: number | null; appends: StreamAppend[] } {
  const decided = decider.decide(command, state);
  if (isRejection(decided)) throw decided.error;
  if (decided.length === 0) return { state, revision, appends: [] };
  const append: StreamAppend = {
    streamId,
    events: toNewEvents(decided, deps.newId, deps.metadata),
    expected: revision === null ? 'no_stream' : revision,
  };
  return { state: decided.reduce(decider.evolve, state), revision: (revision ?? -1) + decided.length, appends: [append] };
}

/** A stream kind as `handleInBatch` decides on it: its handler (for the folded state), its decider and its stream names. */
export type StreamKind<C, E extends { type: string; data: object }, S> = {
  readonly handler: CommandHandler<C, E, S>;
  readonly decider: Decider<C, E, S>;
  readonly streamOf: (id: string) => string;
};

/** Tries of `handleInBatch` before it gives up with a retriable error: each lost to a stream another writer moved. */
const BATCH_TRIES = 10;

/**
 * `handle` with appends to other streams in the same batch (`appendInOrder`): `before()` ahead
 * of the command's (a job's fence, which fails the batch once the job is cancelled), `after(made)`
 * behind them (what records them elsewhere, such as a project's `ProjectEdited`). Decided on the
 * stream as read; when any append of the batch conflicts, all of it is decided again. A refusal
 * throws. Resolves the stream as it then is.
 */
export async function handleInBatch<C, E extends { type: string; data: object }, S>(
  store: EventStore,
  on: StreamKind<C, E, S>,
  id: string,
  command: C,
  write: { readonly newId: () => string; readonly metadata: EventMetadata },
  around: { readonly before?: () => Promise<StreamAppend[]>; readonly after?: (made: readonly StreamAppend[]) => StreamAppend[] },
): Promise<Loaded<S>> {
  for (let tries = 0; tries < BATCH_TRIES; tries++) {
    const { state, revision } = await on.handler.load(id);
    const next = decideNext(on.streamOf(id), on.decider, state, revision, command, write);
    if (next.appends.length === 0) return next;
    const batch = [...((await around.before?.()) ?? []), ...next.appends, ...(around.after?.(next.appends) ?? [])];
    const results = await appendInOrder(store, batch);
    if (results.every((r) => r.ok)) return next;
  }
  throw new AppError('unavailable', `too many concurrent changes to ${on.streamOf(id)}; try again`, { retriable: true });
}

/** `store.appendInOrder` where the store has it, else one append after another, stopping at the first conflict. */
export async function appendInOrder(store: EventStore, appends: readonly StreamAppend[]): Promise<AppendResult[]> {
  if (store.appendInOrder) return store.appendInOrder(appends);
  const results: AppendResult[] = [];
  for (const a of appends) {
    const result = await store.append(a.streamId, a.events, a.expected);
    results.push(result);
    if (!result.ok) break;
  }
  return results;
}

type Fold<E, S> = {
  readonly evolve: (s: S, e: E) => S;
  readonly initialState: () => S;
  readonly fold?: (s: S, events: readonly E[]) => S;
};

/** Reads and folds a stream whole, deciding nothing: for one-off uses, as `handleCommand`. */
export function loadState<E, S>(store: EventStore, streamId: string, fold: Fold<E, S>): Promise<Loaded<S>> {
  return readFolded(store, streamId, fold, null);
}

/** What a handler keeps: the folds of the streams it read lately, and where their snapshots go. */
type Kept<S> = { readonly folds: LRUCache<string, Folded>; readonly snapshots?: SnapshotOptions<S> };

/**
 * The stream's state and revision (null: no stream), folding only the events after the kept
 * state: the handler's own fold, else the stream's snapshot, else none (all the events).
 */
async function readFolded<E, S>(store: EventStore, streamId: string, fold: Fold<E, S>, kept: Kept<S> | null): Promise<Loaded<S>> {
  const start = await startOf(store, streamId, kept);
  const from = start.from;
  const tail = start.tail ?? (await store.readStream(streamId, from ? { fromRevision: from.revision + 1 } : undefined));
  if (tail.length === 0) {
    if (!from) return { state: fold.initialState(), revision: null };
    if (kept && !kept.folds.has(streamId)) kept.folds.set(streamId, from);
    return { state: from.state as S, revision: from.revision };
  }
  const initial = from ? (from.state as S) : fold.initialState();
  const state = fold.fold
    ? fold.fold(
        initial,
        tail.map((e) => ({ type: e.type, data: e.data }) as unknown as E),
      )
    : foldStream(tail, fold.evolve, initial);
  const revision = tail[tail.length - 1].revision;
  if (!kept) return { state, revision };
  const snapshotAt = kept.snapshots ? snapshotIfDue(kept.snapshots, streamId, state, revision, from?.snapshotAt ?? -1) : -1;
  // Two reads of one stream may overlap: the later state wins, whichever ends first.
  if ((kept.folds.get(streamId)?.revision ?? -1) < revision) kept.folds.set(streamId, { state, revision, snapshotAt });
  return { state, revision };
}

/**
 * Where a read of the stream starts: the handler's own fold; else the stream's snapshot, with the
 * events after it (read from the snapshot's own event on, to check it is there); else nothing.
 */
async function startOf<S>(store: EventStore, streamId: string, kept: Kept<S> | null): Promise<{ from?: Folded; tail?: StoredEvent[] }> {
  const own = kept?.folds.get(streamId);
  if (own || !kept?.snapshots) return { from: own };
  const snapshot = await fromSnapshot(kept.snapshots, streamId);
  if (!snapshot) return {};
  const read = await store.readStream(streamId, { fromRevision: snapshot.revision });
  // An event store restored from a backup older than the read store's lacks the snapshot's event:
  // the stream is then folded from its start.
  return read[0]?.revision === snapshot.revision ? { from: snapshot, tail: read.slice(1) } : {};
}

/** The stream's snapshot as a kept fold; none when there is none, it is of another version, or it does not decode. */
async function fromSnapshot<S>(snapshots: SnapshotOptions<S>, streamId: string): Promise<Folded | undefined> {
  const snapshot = await snapshots.store.load(streamId);
  if (!snapshot || snapshot.version !== snapshots.codec.version || !Number.isInteger(snapshot.revision)) return undefined;
  try {
    return { state: snapshots.codec.decode(snapshot.state), revision: snapshot.revision, snapshotAt: snapshot.revision };
  } catch {
    return undefined; // a damaged document: the stream itself is the truth
  }
}

/** Keeps a snapshot when `every` events were folded past the last one (in the background); the revision of the last one. */
function snapshotIfDue<S>(snapshots: SnapshotOptions<S>, streamId: string, state: S, revision: number, snapshotAt: number): number {
  if (revision - snapshotAt < (snapshots.every ?? SNAPSHOT_EVERY)) return snapshotAt;
  void snapshots.store.save(streamId, { version: snapshots.codec.version, revision, state: snapshots.codec.encode(state) });
  return revision;
}
