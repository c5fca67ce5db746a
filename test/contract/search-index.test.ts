import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MongoClient } from 'mongodb';
import { createSqliteSearchIndex } from '../../lib/adapters/embedded/search-index';
import { createMongoSearchIndex } from '../../lib/adapters/mongodb/search-index';
import type { SearchIndex } from '../../lib/ports/search-index';
import { describeSearchIndexContract, type SearchIndexSubject } from './search-index.contract';

async function closeAll(indexes: readonly SearchIndex[]): Promise<void> {
  for (const index of indexes) await index.close();
}

describeSearchIndexContract('embedded (:memory:)', async () => {
  const index = createSqliteSearchIndex({ path: ':memory:' });
  return { index, cleanup: () => index.close() };
});

describeSearchIndexContract(
  'embedded (file)',
  async (): Promise<SearchIndexSubject> => {
    const dir = mkdtempSync(join(tmpdir(), 'search-index-'));
    const path = join(dir, 'search.sqlite');
    const opened = [createSqliteSearchIndex({ path })];
    return {
      index: opened[0],
      reopen: async () => {
        opened.push(createSqliteSearchIndex({ path }));
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

describe('SearchIndex: embedded specifics', function () {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'search-index-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('runs a search from the FTS index, filtered by drive inside MATCH, then looks entries up by rowid', async () => {
    const index = createSqliteSearchIndex({ path: join(dir, 'search.sqlite') });
    try {
      for (const sort of ['relevance', 'newest'] as const) {
        const plan = await index.queryPlan({
          drive_id: 'd',
          text: 'fox "lazy dog"',
          types: ['audio'],
          updated_after: '2024-01-01',
          sort,
          limit: 30,
        });
        assert.match(plan[0], /^SCAN search_fts VIRTUAL TABLE INDEX \d+:M/, plan.join('\n'));
        assert.ok(plan.includes('SEARCH e USING INTEGER PRIMARY KEY (rowid=?)'), plan.join('\n'));
        assert.ok(!plan.some((step) => /^SCAN e\b/.test(step)), plan.join('\n'));
      }
    } finally {
      await index.close();
    }
  });

  it("rewrites an entry's words only when its name, drive or transcript changed", async () => {
    const path = join(dir, 'search.sqlite');
    const index = createSqliteSearchIndex({ path });
    const words = new Database(path, { readonly: true });
    // The FTS index's own pages: any delete or insert of words adds to them.
    const ftsData = () => words.prepare('SELECT group_concat(hex(block)) AS d FROM search_fts_data').get() as { d: string };
    try {
      const drive = '6f1c2a9e-0d4b-4c55-9a43-1b2c3d4e5f60';
      const clip = { id: 'media:a', drive_id: drive, kind: 'media', name: 'street.wav', updated_at: '2024-01-01T00:00:00.000Z' } as const;
      await index.upsert([{ ...clip, content: 'the quick brown fox' }]);
      const before = ftsData();
      await index.upsert([{ ...clip, content: 'the quick brown fox', updated_at: '2024-01-02T00:00:00.000Z' }]);
      assert.equal(ftsData().d, before.d, 'a new date alone left the words as they were');
      const hit = (await index.search({ drive_id: drive, text: 'fox', sort: 'relevance', limit: 10 }))[0];
      assert.equal(hit.entry.updated_at, '2024-01-02T00:00:00.000Z');
      for (const changed of [{ content: 'a slow red fox' }, { name: 'renamed.wav', content: 'a slow red fox' }, {}]) {
        const was = ftsData().d;
        await index.upsert([{ ...clip, ...changed }]);
        assert.notEqual(ftsData().d, was, JSON.stringify(changed));
      }
      assert.deepEqual(await index.search({ drive_id: drive, text: 'fox', sort: 'relevance', limit: 10 }), []);
    } finally {
      words.close();
      await index.close();
    }
  });
  it('answers a full disk with a retriable unavailable that names no path', async () => {
    const path = join(dir, 'search.sqlite');
    const index = createSqliteSearchIndex({ path, maxPageCount: 40 });
    try {
      const content = Array.from({ length: 40_000 }, (_, i) => `word${i}`).join(' ');
      const err = await index
        .upsert([{ id: 'm', drive_id: 'd', kind: 'media', name: 'big.wav', content, updated_at: '2024-01-01T00:00:00.000Z' }])
        .then(
          () => null,
          (e: unknown) => e as { code?: string; retriable?: boolean; message?: string },
        );
      assert.equal(err?.code, 'unavailable');
      assert.equal(err?.retriable, true);
      assert.ok(!err?.message?.includes(dir), err?.message);
    } finally {
      await index.close();
    }
  });
});

describe('SearchIndex: mongodb', function () {
  const url = process.env.MONGO_URL;
  // One database per test, named for this run, so parallel runs and leftovers never collide.
  const run = `search_index_contract_${Date.now().toString(36)}_${process.pid}`;
  let databases = 0;
  let client: MongoClient | undefined;

  before(function () {
    if (url) return;
    console.log('skipped: MONGO_URL not set');
    this.skip();
  });
  after(async () => client?.close());

  describeSearchIndexContract(
    'mongodb',
    async () => {
      if (!url) throw new Error('MONGO_URL not set');
      client ??= await MongoClient.connect(url);
      const db = client.db(`${run}_${(databases += 1)}`);
      const index = await createMongoSearchIndex(db);
      return {
        index,
        // The index does not own the client, so reopening is a second index on the same database.
        reopen: async () => createMongoSearchIndex(db),
        cleanup: async () => {
          await index.close();
          await db.dropDatabase();
        },
      };
    },
    { persistent: true },
  );
});
