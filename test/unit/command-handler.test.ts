import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore, type SqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { commandHandler, foldStream, loadState } from '../../lib/app/command-handler';
import type { Decider, SnapshotCodec } from '../../lib/domain/decider';
import pino from 'pino';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { readStoreSnapshots, SNAPSHOTS, type SnapshotStore } from '../../lib/app/snapshots';
import { waitFor } from '../fixtures/wait';
import type { EventStore, NewEvent } from '../../lib/ports/event-store';

/**
 * A handler's reads fold only what it has not folded before (lib/app/command-handler.ts): the kept
 * state plus the stream's tail must always be what folding the whole stream gives, whoever appended.
 */

type Counted = { readonly type: 'Counted'; readonly data: { readonly by: string } };
type Tally = { readonly total: number; readonly by: readonly string[] };
const tally: Decider<{ by: string }, Counted, Tally> = {
  initialState: () => ({ total: 0, by: [] }),
  evolve: (s, e) => ({ total: s.total + 1, by: [...s.by, e.data.by] }),
  decide: (c) => [{ type: 'Counted', data: { by: c.by } }],
};
/** A second fold of the same streams: kept apart from the first. */
const lastBy: Decider<{ by: string }, Counted, string> = { initialState: () => '', evolve: (_, e) => e.data.by, decide: () => [] };

/** Streams named by their id, as the tests name them. */
const handlerOf = <S>(store: EventStore, fold: Decider<{ by: string }, Counted, S>) => commandHandler(store, fold, (id) => id);

const counted = (by: string): NewEvent => ({ id: randomUUID(), type: 'Counted', data: { by }, metadata: { partition_key: 'k' } });

/** The store, with each readStream's revision asked for and the number of events it returned. */
function spying(store: EventStore) {
  const reads: { streamId: string; from: number | undefined; got: number }[] = [];
  const spy: EventStore = {
    append: (...args) => store.append(...args),
    readAll: (...args) => store.readAll(...args),
    subscribeAll: (...args) => store.subscribeAll(...args),
    close: () => store.close(),
    async readStream(streamId, options) {
      const events = await store.readStream(streamId, options);
      reads.push({ streamId, from: options?.fromRevision, got: events.length });
      return events;
    },
  };
  return { spy, reads };
}

describe('command handling: folded states are kept and only the tail is read', () => {
  let dir: string;
  let path: string;
  let mine: SqliteEventStore;
  let other: SqliteEventStore;
  let stream: string;
  const whole = async (id: string) => foldStream((await other.readStream(id)) as never, tally.evolve, tally.initialState());

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mps-folds-'));
    path = join(dir, 'events.sqlite');
    mine = createSqliteEventStore({ path });
    // Another process on the same file, as the all-in-one worker or a second replica is.
    other = createSqliteEventStore({ path, pollIntervalMs: 10 });
    stream = `tally-${randomUUID()}`;
  });
  afterEach(async () => {
    await mine.close();
    await other.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a stream whole once, then only the events after the state it kept', async () => {
    await mine.append(
      stream,
      Array.from({ length: 100 }, (_, i) => counted(`e${i}`)),
      'no_stream',
    );
    const { spy, reads } = spying(mine);
    const tallies = handlerOf(spy, tally);
    const first = await tallies.load(stream);
    const second = await tallies.load(stream);
    assert.equal(first.state.total, 100);
    assert.deepEqual(second.state, first.state);
    assert.deepEqual(reads, [
      { streamId: stream, from: undefined, got: 100 },
      { streamId: stream, from: 100, got: 0 },
    ]);
  });

  it('folds in what another writer appended since, to the state a whole read gives', async () => {
    const { spy, reads } = spying(mine);
    const tallies = handlerOf(spy, tally);
    await mine.append(stream, [counted('a'), counted('b')], 'no_stream');
    await tallies.load(stream);
    await other.append(stream, [counted('c')], 1);
    await other.append(stream, [counted('d'), counted('e')], 2);
    const { state } = await tallies.load(stream);
    assert.deepEqual(state, await whole(stream));
    assert.deepEqual(state.by, ['a', 'b', 'c', 'd', 'e']);
    assert.deepEqual(reads[1], { streamId: stream, from: 2, got: 3 });
  });

  it('decides on the kept state and the tail, and after a conflict reads the tail again', async () => {
    const { spy, reads } = spying(mine);
    await mine.append(stream, [counted('a')], 'no_stream');
    // Between the command's read and its append, another writer appends: the first try conflicts.
    let raced = true;
    const racing: EventStore = {
      ...spy,
      async append(streamId, events, expected) {
        if (!raced) {
          raced = true;
          assert.equal((await other.append(stream, [counted('racer')], 1)).ok, true);
        }
        return spy.append(streamId, events, expected);
      },
    };
    const tallies = handlerOf(racing, tally);
    await tallies.load(stream);
    await other.append(stream, [counted('b')], 0);
    raced = false;
    const result = await tallies.handle(stream, { by: 'mine' }, { newId: randomUUID, metadata: { partition_key: 'k' } });
    assert.deepEqual(result.state.by, ['a', 'b', 'racer', 'mine']);
    assert.equal(result.revision, 3);
    assert.deepEqual((await whole(stream)).by, ['a', 'b', 'racer', 'mine']);
    assert.deepEqual(
      reads.map(({ from, got }) => [from, got]),
      [
        [undefined, 1],
        [1, 1],
        [2, 1],
      ],
      'each read starts after the state kept by the read before it',
    );
  });

  it('keeps only states folded from the store: a command’s own events are read back once', async () => {
    const { spy, reads } = spying(mine);
    const tallies = handlerOf(spy, tally);
    await tallies.handle(stream, { by: 'a' }, { newId: randomUUID, metadata: { partition_key: 'k' } });
    const { state } = await tallies.load(stream);
    assert.deepEqual(state.by, ['a']);
    assert.deepEqual(
      reads.map(({ from, got }) => [from, got]),
      [
        [undefined, 0],
        [undefined, 1],
      ],
    );
  });

  it('keeps each fold of a stream apart', async () => {
    const [tallies, lasts] = [handlerOf(mine, tally), handlerOf(mine, lastBy)];
    await mine.append(stream, [counted('a'), counted('b')], 'no_stream');
    assert.equal((await tallies.load(stream)).state.total, 2);
    assert.equal((await lasts.load(stream)).state, 'b');
    await mine.append(stream, [counted('c')], 1);
    assert.equal((await lasts.load(stream)).state, 'c');
    assert.equal((await tallies.load(stream)).state.total, 3);
  });

  it('keeps a bounded number of streams: the least recently read is read whole again', async () => {
    const { spy, reads } = spying(mine);
    const tallies = handlerOf(spy, tally);
    const ids = Array.from({ length: 1001 }, () => `tally-${randomUUID()}`);
    await Promise.all(ids.map((id) => mine.append(id, [counted(id)], 'no_stream')));
    for (const id of ids) await tallies.load(id);
    reads.length = 0;
    await tallies.load(ids[1000]);
    await tallies.load(ids[0]);
    assert.deepEqual(
      reads.map((r) => r.from),
      [1, undefined],
    );
  });

  it('keeps a store’s states to that store: another store on another file reads whole', async () => {
    await mine.append(stream, [counted('a')], 'no_stream');
    await handlerOf(mine, tally).load(stream);
    const elsewhere = createSqliteEventStore({ path: join(dir, 'elsewhere.sqlite') });
    try {
      assert.deepEqual((await handlerOf(elsewhere, tally).load(stream)).state, tally.initialState());
    } finally {
      await elsewhere.close();
    }
  });

  it('reads a stream whole at each one-off loadState, which keeps nothing', async () => {
    await mine.append(stream, [counted('a'), counted('b')], 'no_stream');
    const { spy, reads } = spying(mine);
    await loadState(spy, stream, tally);
    const { state } = await loadState(spy, stream, tally);
    assert.equal(state.total, 2);
    assert.deepEqual(
      reads.map((r) => r.from),
      [undefined, undefined],
    );
  });
});

describe('command handling: snapshots of folded streams (lib/app/snapshots.ts)', () => {
  let dir: string;
  let store: SqliteEventStore;
  let read: ReturnType<typeof createSqliteReadStore>;
  let stream: string;
  const log = pino({ level: 'silent' });
  /** The tally as a snapshot: its count and who counted, as plain JSON. */
  const codec: SnapshotCodec<Tally> = { version: 1, encode: (s) => s, decode: (json) => json as Tally };
  const snapshotted = (s: EventStore, options: { every?: number; version?: number; snapshots?: SnapshotStore } = {}) =>
    commandHandler(s, tally, (id) => id, {
      store: options.snapshots ?? readStoreSnapshots(read, log),
      codec: { ...codec, version: options.version ?? 1 },
      every: options.every ?? 100,
    });
  const append = async (n: number, prefix: string) => {
    const head = (await store.readStream(stream)).length;
    for (let i = 0; i < n; i += 50) {
      const batch = Array.from({ length: Math.min(50, n - i) }, (_, k) => counted(`${prefix}${i + k}`));
      const at = head + i;
      const result = await store.append(stream, batch, at === 0 ? 'no_stream' : at - 1);
      assert.ok(result.ok);
    }
  };
  const whole = async () => foldStream((await store.readStream(stream)) as never, tally.evolve, tally.initialState());
  const snapshotSaved = (revision: number) =>
    waitFor(async () => ((await read.get(SNAPSHOTS, stream))?.revision === revision ? true : null), { what: `a snapshot at ${revision}` });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mps-snapshots-'));
    store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
    read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
    stream = `tally-${randomUUID()}`;
  });
  afterEach(async () => {
    await store.close();
    await read.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps a snapshot once enough events are folded; a handler without a fold of its own reads only the events after it', async () => {
    await append(250, 'a');
    await snapshotted(store).load(stream);
    await snapshotSaved(249);
    await append(30, 'b');

    // A restarted process: a new handler, with nothing folded.
    const { spy, reads } = spying(store);
    const { state, revision } = await snapshotted(spy).load(stream);
    assert.equal(revision, 279);
    assert.deepEqual(state, await whole());
    assert.deepEqual(reads, [{ streamId: stream, from: 249, got: 31 }], 'the snapshot’s own event, to check it is there, and the 30 after');
  });

  it('keeps the next snapshot after `every` more events, and decides on snapshot plus tail', async () => {
    await append(120, 'a');
    const handler = snapshotted(store);
    await handler.load(stream);
    await snapshotSaved(119);
    await append(99, 'b');
    await handler.load(stream);
    assert.equal((await read.get(SNAPSHOTS, stream))?.revision, 119, '99 events past it: not yet');
    await handler.handle(stream, { by: 'c' }, { newId: randomUUID, metadata: { partition_key: 'k' } });
    await handler.load(stream);
    await snapshotSaved(219);

    const { state } = await snapshotted(store).handle(stream, { by: 'd' }, { newId: randomUUID, metadata: { partition_key: 'k' } });
    assert.deepEqual(state, await whole());
    assert.equal(state.total, 221);
  });

  it('folds the stream from its start when the snapshot is of another version, cannot be read, or is past the stream', async () => {
    await append(150, 'a');
    await snapshotted(store).load(stream);
    await snapshotSaved(149);

    const other = spying(store);
    assert.deepEqual((await snapshotted(other.spy, { version: 2 }).load(stream)).state, await whole());
    assert.deepEqual(other.reads[0].from, undefined, 'another version: read whole');

    // A damaged document: its state does not decode.
    await read.put(SNAPSHOTS, { _id: stream, _rev: 9, version: 1, revision: 149, state: null }, 1);
    const breaking: SnapshotCodec<Tally> = { ...codec, decode: (json) => ({ total: (json as Tally).total, by: [...(json as Tally).by] }) };
    const damaged = spying(store);
    const handler = commandHandler(damaged.spy, tally, (id) => id, { store: readStoreSnapshots(read, log), codec: breaking, every: 100 });
    assert.deepEqual((await handler.load(stream)).state, await whole());
    assert.deepEqual(damaged.reads[0].from, undefined, 'a snapshot that does not decode: read whole');

    const failing: SnapshotStore = { load: () => Promise.resolve(null), save: () => Promise.resolve() };
    const unreadable = spying(store);
    assert.deepEqual((await snapshotted(unreadable.spy, { snapshots: failing }).load(stream)).state, await whole());
    assert.deepEqual(unreadable.reads[0].from, undefined);

    // An event store restored from an older backup than the read store's: the snapshot's event is not there.
    const restored = createSqliteEventStore({ path: join(dir, 'restored.sqlite') });
    try {
      await restored.append(
        stream,
        Array.from({ length: 20 }, (_, i) => counted(`r${i}`)),
        'no_stream',
      );
      const { state, revision } = await snapshotted(restored).load(stream);
      assert.equal(revision, 19);
      assert.equal(state.total, 20);
      assert.deepEqual(state.by.slice(0, 2), ['r0', 'r1']);
    } finally {
      await restored.close();
    }
  });
});
