import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EventStoreDBClient } from '@eventstore/db-client';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createEsdbEventStore } from '../../lib/adapters/eventstoredb/event-store';
import { skipUnless, waitFor } from '../fixtures/wait';
import { describeEventStoreContract } from './event-store.contract';

const run = promisify(execFile);

describeEventStoreContract('embedded (SQLite file)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'es-'));
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
  return { store, cleanup: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
});

describeEventStoreContract("embedded (SQLite file), appending through the file's one writer in another store", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'es-'));
  const path = join(dir, 'events.sqlite');
  const owner = createSqliteEventStore({ path, serveWriters: { socketPath: join(dir, 'events.sock') } });
  await owner.writersListening();
  const store = createSqliteEventStore({ path, writerSocket: join(dir, 'events.sock') });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await owner.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describeEventStoreContract(
  'EventStoreDB',
  async () => {
    const client = EventStoreDBClient.connectionString(process.env.ESDB_URL!);
    const store = createEsdbEventStore(client);
    return { store, cleanup: () => store.close() };
  },
  { before: skipUnless('ESDB_URL') },
);

describe('embedded EventStore: the time an event carries', () => {
  it('is when its batch was written, not when the append was asked (as EventStoreDB stamps on its server)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
    try {
      const asked = Date.now();
      const appending = store.append(
        'time-1',
        [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'time-1' } }],
        'no_stream',
      );
      // The batch goes to the writer at the end of this turn: hold the turn for 60 ms, as a busy process would.
      while (Date.now() - asked < 60);
      assert.equal((await appending).ok, true);
      const [event] = await store.readStream('time-1');
      assert.ok(Date.parse(event.createdAt) - asked >= 60, `${event.createdAt} is at least 60 ms after ${new Date(asked).toISOString()}`);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embedded EventStore: the same file from another process', () => {
  it('sees an append made by another process within a second, and keeps it after reopening', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const path = join(dir, 'events.sqlite');
    const store = createSqliteEventStore({ path });
    const seen: string[] = [];
    const sub = store.subscribeAll(null, async (e) => void seen.push(e.type));
    try {
      const script = `
        const { createSqliteEventStore } = require('./lib/adapters/embedded/event-store');
        const s = createSqliteEventStore({ path: ${JSON.stringify(path)} });
        s.append('other-1', [{ id: require('crypto').randomUUID(), type: 'FromOtherProcess', data: {}, metadata: { partition_key: 'k' } }], 'no_stream')
          .then(() => s.close());`;
      execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: join(__dirname, '..', '..') });
      const started = Date.now();
      await waitFor(() => seen.includes('FromOtherProcess'), { timeoutMs: 1000, what: 'the other process append' });
      assert.ok(Date.now() - started < 1000);
    } finally {
      await sub.close();
      await store.close();
    }
    const reopened = createSqliteEventStore({ path });
    assert.equal((await reopened.readStream('other-1')).length, 1);
    await reopened.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits its batches beside another process committing batches to the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const path = join(dir, 'events.sqlite');
    const store = createSqliteEventStore({ path });
    const appendMany = (s: typeof store, prefix: string) =>
      Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          s.append(`${prefix}-${i}`, [{ id: randomUUID(), type: 'T', data: { i }, metadata: { partition_key: prefix } }], 'no_stream'),
        ),
      );
    try {
      const script = `
        const { randomUUID } = require('crypto');
        const { createSqliteEventStore } = require('./lib/adapters/embedded/event-store');
        const s = createSqliteEventStore({ path: ${JSON.stringify(path)} });
        (async () => {
          for (let round = 0; round < 10; round++) {
            await Promise.all(Array.from({ length: 20 }, (_, i) =>
              s.append('child-' + round + '-' + i, [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'child' } }], 'no_stream')));
          }
          await s.close();
        })();`;
      let childDone = false;
      const child = run(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: join(__dirname, '..', '..') }).finally(
        () => (childDone = true),
      );
      // Until the child has finished, so that the two writers overlap.
      let rounds = 0;
      for (; !childDone || rounds < 5; rounds++) (await appendMany(store, `parent-${rounds}`)).forEach((r) => assert.equal(r.ok, true));
      await child;
      const all = await store.readAll(null, 100_000);
      assert.equal(all.length, rounds * 200 + 10 * 20);
      assert.equal(new Set(all.map((e) => e.position)).size, all.length);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embedded EventStore: one writer per file, other processes append through its socket', function () {
  this.timeout(60_000);
  const root = join(__dirname, '..', '..');
  const childAppends = (path: string, socket: string, rounds: number) => `
    const { randomUUID } = require('crypto');
    const { createSqliteEventStore } = require('./lib/adapters/embedded/event-store');
    const s = createSqliteEventStore({ path: ${JSON.stringify(path)}, writerSocket: ${JSON.stringify(socket)} });
    (async () => {
      for (let round = 0; round < ${rounds}; round++) {
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
          s.append('child-' + round + '-' + i, [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'child' } }], 'no_stream')));
        if (!results.every((r) => r.ok)) throw new Error('a child append failed');
      }
      s.saveCheckpoint('child-group', 42);
      await s.close();
    })().catch((err) => { console.error(err); process.exit(1); });`;

  it("commits a child process's batches beside its own, in one order, and saves the child's checkpoint", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const path = join(dir, 'events.sqlite');
    const socket = join(dir, 'events.sock');
    let told = 0;
    const store = createSqliteEventStore({ path, serveWriters: { socketPath: socket, onAppended: () => told++ } });
    try {
      await store.writersListening();
      assert.equal(statSync(socket).mode & 0o777, 0o600, 'only the service user may append');
      let childDone = false;
      const child = run(process.execPath, ['--require', 'tsx/cjs', '-e', childAppends(path, socket, 10)], { cwd: root }).finally(
        () => (childDone = true),
      );
      let rounds = 0;
      for (; !childDone || rounds < 5; rounds++) {
        const results = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            store.append(
              `parent-${rounds}-${i}`,
              [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'p' } }],
              'no_stream',
            ),
          ),
        );
        results.forEach((r) => assert.equal(r.ok, true));
      }
      await child;
      const all = await store.readAll(null, 100_000);
      assert.equal(all.length, rounds * 200 + 10 * 20);
      assert.deepEqual(
        all.map((e) => Number(e.position)),
        [...all.map((e) => Number(e.position))].sort((a, b) => a - b),
      );
      assert.equal(store.loadCheckpoint('child-group'), 42);
      // Told as the child's batches are committed (serve wakes the projector with it).
      assert.ok(told >= 1 && told <= 10, `told of the child's appends ${told} times, once per batch at most`);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lets a child that starts first wait for the writer to listen, and decides expected revisions across processes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const path = join(dir, 'events.sqlite');
    const socket = join(dir, 'events.sock');
    createSqliteEventStore({ path }).close(); // the file exists; its writer is not up yet
    const child = run(process.execPath, ['--require', 'tsx/cjs', '-e', childAppends(path, socket, 2)], { cwd: root });
    await new Promise((r) => setTimeout(r, 300));
    const store = createSqliteEventStore({ path, serveWriters: { socketPath: socket } });
    try {
      await child;
      // The child's streams exist: the same expectation from here conflicts, decided by the one writer.
      const again = await store.append(
        'child-0-0',
        [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'c' } }],
        'no_stream',
      );
      assert.deepEqual(again, { ok: false, conflict: { expected: 'no_stream', actual: 0 } });
      assert.equal((await store.readAll(null, 1000)).length, 40);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a second writer on the same file while the first one answers, and replaces a socket nobody answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const path = join(dir, 'events.sqlite');
    const socket = join(dir, 'events.sock');
    const first = createSqliteEventStore({ path, serveWriters: { socketPath: socket } });
    try {
      await first.writersListening();
      const second = createSqliteEventStore({ path, serveWriters: { socketPath: socket } });
      await assert.rejects(second.writersListening(), /another process is the writer of this events file/);
      await second.close();
      const via = createSqliteEventStore({ path, writerSocket: socket });
      assert.equal(
        (await via.append('still', [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'k' } }], 'no_stream')).ok,
        true,
      );
      await via.close();
    } finally {
      await first.close();
    }
    // The first is gone and its socket file may stay behind (a kill -9): the next writer takes it over.
    writeFileSync(socket, '');
    const next = createSqliteEventStore({ path, serveWriters: { socketPath: socket } });
    await next.writersListening();
    await next.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails the append, never the process, when whatever listens on the socket answers garbage', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const socket = join(dir, 'events.sock');
    const liar = createServer((peer) => peer.once('data', () => peer.write('this is not json\n')));
    await new Promise<void>((resolve) => liar.listen(socket, resolve));
    const store = createSqliteEventStore({ path: join(dir, 'events.sqlite'), writerSocket: socket });
    try {
      await assert.rejects(
        store.append('s', [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'k' } }], 'no_stream'),
        /closed before the batch was answered/,
      );
    } finally {
      await store.close();
      liar.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers every batch in flight when the writer goes away: committed, or failed, never left waiting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'es-'));
    const path = join(dir, 'events.sqlite');
    const socket = join(dir, 'events.sock');
    const owner = createSqliteEventStore({ path, serveWriters: { socketPath: socket } });
    await owner.writersListening();
    const store = createSqliteEventStore({ path, writerSocket: socket });
    try {
      await store.append('warm', [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'w' } }], 'no_stream');
      const appends = Array.from({ length: 300 }, (_, i) =>
        store.append(`s-${i}`, [{ id: randomUUID(), type: 'T', data: {}, metadata: { partition_key: 'w' } }], 'no_stream'),
      );
      const settling = Promise.allSettled(appends);
      await owner.close();
      const settled = await settling;
      const made = settled.filter((o) => o.status === 'fulfilled' && o.value.ok).length;
      const failed = settled.filter((o) => o.status === 'rejected').length;
      assert.equal(made + failed, 300, 'each append either made or failed');
      console.log(`      ${made} made, ${failed} failed as the writer closed`);
      // What was answered as made is there; nothing else is.
      const reopened = createSqliteEventStore({ path });
      assert.equal((await reopened.readAll(null, 1000)).length - 1 >= made, true);
      await reopened.close();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
