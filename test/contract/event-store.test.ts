import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
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

describeEventStoreContract(
  'EventStoreDB',
  async () => {
    const client = EventStoreDBClient.connectionString(process.env.ESDB_URL!);
    const store = createEsdbEventStore(client);
    return { store, cleanup: () => store.close() };
  },
  { before: skipUnless('ESDB_URL') },
);

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
