import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventStoreDBClient } from '@eventstore/db-client';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createEsdbEventStore } from '../../lib/adapters/eventstoredb/event-store';
import { skipUnless, waitFor } from '../fixtures/wait';
import { describeEventStoreContract } from './event-store.contract';

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
});
