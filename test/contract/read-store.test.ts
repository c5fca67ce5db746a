import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { createMongoReadStore } from '../../lib/adapters/mongodb/read-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { describeReadStoreContract, type ReadStoreSubject } from './read-store.contract';

async function closeAll(stores: readonly ReadStore[]): Promise<void> {
  for (const store of stores) await store.close();
}

describeReadStoreContract('embedded (:memory:)', async () => {
  const store = createSqliteReadStore({ path: ':memory:' });
  return { store, cleanup: () => store.close() };
});

describeReadStoreContract(
  'embedded (file)',
  async (): Promise<ReadStoreSubject> => {
    const dir = mkdtempSync(join(tmpdir(), 'read-store-'));
    const path = join(dir, 'read.db');
    const opened = [createSqliteReadStore({ path })];
    return {
      store: opened[0],
      reopen: async () => {
        opened.push(createSqliteReadStore({ path }));
        return opened[opened.length - 1];
      },
      cleanup: async () => {
        await closeAll(opened);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  { persistent: true },
);

describe('ReadStore: mongodb', function () {
  const url = process.env.MONGO_URL;
  // One database per test, named for this run, so parallel runs and leftovers never collide.
  const run = `read_store_contract_${Date.now().toString(36)}_${process.pid}`;
  let databases = 0;
  let client: MongoClient | undefined;

  before(function () {
    if (url) return;
    console.log('skipped: MONGO_URL not set');
    this.skip();
  });
  after(async () => client?.close());

  describeReadStoreContract(
    'mongodb',
    async () => {
      if (!url) throw new Error('MONGO_URL not set');
      client ??= await MongoClient.connect(url);
      const db = client.db(`${run}_${(databases += 1)}`);
      const store = createMongoReadStore(db);
      return {
        store,
        // The store does not own the client, so reopening is a second store on the same database.
        reopen: async () => createMongoReadStore(db),
        cleanup: async () => {
          await store.close();
          await db.dropDatabase();
        },
      };
    },
    { persistent: true },
  );
});
