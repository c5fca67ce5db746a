import assert from 'node:assert/strict';
import pino from 'pino';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { readYourWrites } from '../../lib/app/consistency';
import {
  leastMark,
  PROJECTION_MARKS,
  recordProjectionMarks,
  SESSION_POSITIONS,
  sharedSessionPositions,
  sharedWatermark,
} from '../../lib/app/shared-consistency';
import type { LogSubscription, PartitionMark } from '../../lib/ports/event-log';

const log = pino({ level: 'silent' });

/** A projector member as the recorder sees it: a subscription whose partitions reach marks when told. */
function member(options: { partitioned: boolean }) {
  const listeners: ((m: PartitionMark) => void)[] = [];
  const watermarkListeners: ((p: bigint) => void)[] = [];
  const subscription: LogSubscription = {
    close: async () => undefined,
    status: () => ({ group: 'projections', running: true, lag: 0 }),
    onWatermark: (l) => void watermarkListeners.push(l),
    ...(options.partitioned ? { onPartitionMark: (l: (m: PartitionMark) => void) => void listeners.push(l) } : {}),
  };
  return {
    subscription,
    reach: (partition: number, position: bigint, partitions = 2) => listeners.forEach((l) => l({ partition, position, partitions })),
    watermark: (position: bigint) => watermarkListeners.forEach((l) => l(position)),
  };
}

describe('read-your-writes across processes (lib/app/shared-consistency.ts)', () => {
  let store: ReturnType<typeof createSqliteReadStore>;
  beforeEach(() => (store = createSqliteReadStore({ path: ':memory:' })));
  afterEach(() => store.close());

  const marks = async () =>
    Object.fromEntries((await store.find(PROJECTION_MARKS, { group: 'projections' })).map((d) => [d.partition, d.position]));

  it('knows the group watermark only once every partition has a mark, as the least of them', () => {
    const doc = (partition: number, position: string, partitions = 3) => ({ partition, position, partitions });
    assert.equal(leastMark([]), null);
    assert.equal(leastMark([doc(0, '10'), doc(2, '5')]), null, 'partition 1 has none');
    assert.equal(leastMark([doc(0, '10'), doc(1, '7'), doc(2, '12')]), 7n);
    // A new topic with two partitions: partition 2's old record no longer counts.
    assert.equal(leastMark([doc(0, '40', 2), doc(1, '30', 2), doc(2, '12')]), 30n);
  });

  it('records the marks two members reach, each partition only ever rising', async () => {
    const [a, b] = [member({ partitioned: true }), member({ partitioned: true })];
    const recorders = [a, b].map(({ subscription }) => recordProjectionMarks({ store, group: 'projections', subscription, log }));
    a.reach(0, 100n);
    b.reach(1, 80n);
    // A member that lost partition 0 reports an older mark of it late: it changes nothing.
    b.reach(0, 60n);
    await Promise.all(recorders.map((r) => r.idle()));
    assert.deepEqual(await marks(), { 0: '100', 1: '80' });
  });

  it('writes a burst of marks as they come, the latest of each partition last, whatever raced', async () => {
    const [a, b] = [member({ partitioned: true }), member({ partitioned: true })];
    const recorders = [a, b].map(({ subscription }) => recordProjectionMarks({ store, group: 'projections', subscription, log }));
    for (let position = 1n; position <= 200n; position++) {
      a.reach(0, position);
      b.reach(0, position - 1n); // two owners of one partition for a moment (a rebalance)
      a.reach(1, position * 2n);
    }
    await Promise.all(recorders.map((r) => r.idle()));
    assert.deepEqual(await marks(), { 0: '200', 1: '400' });
  });

  it('records the watermark of a log without partitions as partition 0 of 1', async () => {
    const m = member({ partitioned: false });
    const recorder = recordProjectionMarks({ store, group: 'projections', subscription: m.subscription, log });
    m.watermark(42n);
    await recorder.idle();
    assert.deepEqual(await marks(), { 0: '42' });
    const [doc] = await store.find(PROJECTION_MARKS, {});
    assert.equal(doc.partitions, 1);
  });

  it('lets a reader in another process wait until every partition has passed a write', async () => {
    const m = member({ partitioned: true });
    const recorder = recordProjectionMarks({ store, group: 'projections', subscription: m.subscription, log });
    const watermark = sharedWatermark({ queries: store, group: 'projections', log, idlePollMs: 60_000 });
    try {
      m.reach(0, 50n);
      m.reach(1, 10n);
      const waiting = watermark.waitFor(40n, 5_000);
      let done = false;
      void waiting.then(() => (done = true));
      await recorder.idle();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(done, false, 'partition 1 is at 10 still');
      m.reach(1, 45n);
      assert.equal(await waiting, true);
      assert.ok(watermark.passed(40n));
      assert.equal(await watermark.waitFor(1_000n, 100), false, 'a position nobody reached times out');
    } finally {
      watermark.stop();
    }
  });

  it('tells listeners of moves promptly while they listen (the job event streams), and stops when they leave', async () => {
    const m = member({ partitioned: false });
    const recorder = recordProjectionMarks({ store, group: 'projections', subscription: m.subscription, log });
    // Idle polling alone would take a minute: only the listened rate can see the move in time.
    const watermark = sharedWatermark({ queries: store, group: 'projections', log, idlePollMs: 60_000, listenedPollMs: 20 });
    try {
      let moves = 0;
      const unlisten = watermark.onMove!(() => (moves += 1));
      m.watermark(70n);
      await recorder.idle();
      await waitUntil(() => moves > 0);
      assert.equal(watermark.current(), 70n);
      unlisten();
      unlisten(); // twice is once
      const before = moves;
      m.watermark(80n);
      await recorder.idle();
      await watermark.refresh();
      assert.equal(watermark.current(), 80n);
      assert.equal(moves, before, 'a listener that left is not called');
    } finally {
      watermark.stop();
    }
  });

  it("notes a token's write in one process, and makes its next read in another wait for it", async () => {
    const sessions = sharedSessionPositions(store, log);
    let appended: bigint | null = 30n;
    const never = sharedWatermark({ queries: store, group: 'projections', log, idlePollMs: 60_000 });
    const command = readYourWrites({ sessions, watermark: never, lastAppended: () => appended });
    const m = member({ partitioned: true });
    const recorder = recordProjectionMarks({ store, group: 'projections', subscription: m.subscription, log });
    const watermark = sharedWatermark({ queries: store, group: 'projections', log, idlePollMs: 60_000 });
    const query = readYourWrites({ sessions: sharedSessionPositions(store, log), watermark, lastAppended: () => null, timeoutMs: 5_000 });
    try {
      assert.equal(await query.beforeRead('token-1'), 'none', 'nothing written yet');
      await command.afterWrite('token-1');
      appended = 20n;
      await command.afterWrite('token-1'); // an older position never replaces a newer one
      assert.equal((await store.get(SESSION_POSITIONS, 'token-1'))?.position, '30');
      const read = query.beforeRead('token-1');
      m.reach(0, 35n, 1);
      await recorder.idle();
      assert.equal(await read, 'waited');
      assert.equal(await query.beforeRead('token-1'), 'passed');
    } finally {
      never.stop();
      watermark.stop();
    }
  });

  it('keeps the highest position of a token that two command processes write, each putting on what it last knew', async () => {
    const [a, b] = [sharedSessionPositions(store, log), sharedSessionPositions(store, log)];
    const position = async () => (await store.get(SESSION_POSITIONS, 'token-1'))?.position;
    await a.wrote('token-1', 10n);
    await b.wrote('token-1', 20n);
    await a.wrote('token-1', 15n); // a's put on revision 1 is stale: it reads again and finds 20
    assert.equal(await position(), '20');
    await a.wrote('token-1', 25n);
    assert.equal(await position(), '25');
    await Promise.all([a.wrote('token-1', 40n), b.wrote('token-1', 30n), a.wrote('token-1', 35n), b.wrote('token-1', 50n)]);
    assert.equal(await position(), '50');
    assert.equal(await b.lastWrite('token-1'), 50n);
  });

  it('records one position for the 2xx of one turn of a token, each answered once a position at least its own is stored', async () => {
    const puts: string[] = [];
    const counted = {
      ...store,
      get: store.get.bind(store),
      put: (c: string, doc: Record<string, unknown>, rev: number | null) => {
        if (c === SESSION_POSITIONS) puts.push(String(doc.position));
        return store.put(c, doc as never, rev);
      },
    } as typeof store;
    const sessions = sharedSessionPositions(counted, log);
    const stored = async () => BigInt(String((await store.get(SESSION_POSITIONS, 'token-1'))?.position));
    const seen: bigint[] = [];
    // Fifty answers of one group commit, in no order; each looks at what is stored once it may go out.
    const positions = Array.from({ length: 50 }, (_, i) => BigInt(100 + ((i * 37) % 50)));
    await Promise.all(positions.map(async (p) => (await sessions.wrote('token-1', p), seen.push(await stored()))));
    assert.deepEqual(puts, ['149'], 'one record, of the highest');
    assert.ok(seen.every((s) => s >= 149n));
    await sessions.wrote('token-1', 120n); // below what is recorded: nothing to write
    await Promise.all([sessions.wrote('token-1', 160n), sessions.wrote('token-2', 5n)]);
    assert.deepEqual(puts, ['149', '160', '5']);
    assert.equal(await stored(), 160n);
  });

  it("reads the positions a turn's requests need in one query, made after they all arrived", async () => {
    const queries: string[][] = [];
    const counted = {
      ...store,
      get: (c: string, id: string) => (c === SESSION_POSITIONS && queries.push([id]), store.get(c, id)),
      getMany: (c: string, ids: readonly string[]) => (c === SESSION_POSITIONS && queries.push([...ids]), store.getMany(c, ids)),
    } as typeof store;
    const writer = sharedSessionPositions(store, log);
    const reader = sharedSessionPositions(counted, log);
    await writer.wrote('token-1', 10n);
    const reads = ['token-1', 'token-2', 'token-1', 'token-3'].map((t) => reader.lastWrite(t));
    // Recorded after the reads were asked for, in the same turn: the one query comes after it.
    await store.put(SESSION_POSITIONS, { _id: 'token-3', _rev: 1, position: '7' }, null);
    assert.deepEqual(await Promise.all(reads), [10n, undefined, 10n, 7n]);
    assert.deepEqual(queries, [['token-1', 'token-2', 'token-3']]);
    await writer.wrote('token-1', 12n);
    assert.equal(await reader.lastWrite('token-1'), 12n, 'a later turn reads again');
    assert.deepEqual(queries.at(-1), ['token-1']);
    // A query that fails fails every read of its turn: each answers an error, not a document that may be stale.
    const failing = { ...store, getMany: () => Promise.reject(new Error('disk I/O error')) } as unknown as typeof store;
    const down = sharedSessionPositions(failing, log);
    const failed = await Promise.allSettled([down.lastWrite('a'), down.lastWrite('b')]);
    assert.deepEqual(
      failed.map((f) => f.status),
      ['rejected', 'rejected'],
    );
  });
});

/** Polls a condition (bounded: 5 s). */
async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(condition(), 'condition not met within 5 s');
}
