import Database from 'better-sqlite3';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { countSql, createSqliteReadStore, findSql } from '../../lib/adapters/embedded/read-store';
import { createMongoReadStore } from '../../lib/adapters/mongodb/read-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { JOB_INDEXES, JOBS } from '../../lib/read-models/jobs';
import { waitFor } from '../fixtures/wait';
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

describe('ReadStore: embedded, its write-ahead log', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'read-store-wal-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * The WAL index header in the -shm file (sqlite.org/walformat.html §2.1): mxFrame, the last
   * valid frame, at byte 16; nBackfill, the frames copied back into the database, at byte 96.
   * While nBackfill < mxFrame every read searches the WAL index first: at 50,000 frames that made
   * a point read about four times slower.
   */
  function walIndex(path: string): { mxFrame: number; nBackfill: number } {
    const header = readFileSync(`${path}-shm`).subarray(0, 100);
    return { mxFrame: header.readUInt32LE(16), nBackfill: header.readUInt32LE(96) };
  }

  it('is copied back into the database once writes pause, even when a reader held it open at the last commit', async () => {
    const path = join(dir, 'read.sqlite');
    const store = createSqliteReadStore({ path, checkpoints: { idleMs: 50 } });
    const reader = new Database(path, { readonly: true });
    try {
      // A reader inside a read transaction pins the frames the last commit's automatic checkpoint would copy.
      reader.exec('BEGIN');
      reader.prepare('SELECT COUNT(*) FROM docs').get();
      for (let i = 0; i < 20; i++) {
        await store.putMany(
          Array.from({ length: 200 }, (_, j) => ({
            collection: 'jobs',
            doc: { _id: `job-${i}-${j}`, _rev: 1, text: 'x'.repeat(400) },
            expectedRev: null,
          })),
        );
      }
      reader.exec('COMMIT');
      const before = walIndex(path);
      assert.ok(before.nBackfill < before.mxFrame, `the reader should have kept frames in the WAL: ${JSON.stringify(before)}`);
      await waitFor(() => walIndex(path).nBackfill === walIndex(path).mxFrame, { timeoutMs: 5000, what: 'the WAL to be copied back' });
      assert.equal((await store.get('jobs', 'job-19-199'))?._id, 'job-19-199');
    } finally {
      reader.close();
      await store.close();
    }
  });
});

describe('ReadStore: embedded, its indexes', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'read-store-indexes-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const indexesOf = (path: string) => {
    const db = new Database(path, { readonly: true });
    try {
      return db
        .prepare<[], { name: string; sql: string }>(
          "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'docs' AND sql IS NOT NULL",
        )
        .all();
    } finally {
      db.close();
    }
  };

  it('indexes each collection’s documents only, and drops the whole-table indexes of older stores', async () => {
    const path = join(dir, 'read.sqlite');
    // A store as made before: an index over every document of the table, led by the collection,
    // under the name ensureIndex gave it then.
    const old = createSqliteReadStore({ path });
    await old.close();
    const legacy = new Database(path);
    legacy.exec(
      `CREATE INDEX "docs_jobs_drive_id_created_at_36630e7991f8" ON docs (collection, json_extract(doc, '$.drive_id'), json_extract(doc, '$.created_at'))`,
    );
    legacy.close();

    const store = createSqliteReadStore({ path });
    try {
      await store.ensureIndex('jobs', ['drive_id', 'created_at']);
      await store.ensureIndex("o'clock", ['drive_id']);
      const indexes = indexesOf(path);
      assert.equal(indexes.length, 2, JSON.stringify(indexes));
      assert.match(indexes.find((i) => i.name.startsWith('docs_jobs_'))!.sql, /WHERE collection = 'jobs'$/);
      assert.match(indexes.find((i) => i.name.startsWith('docs_o_clock_'))!.sql, /WHERE collection = 'o''clock'$/);
      await store.put("o'clock", { _id: 'a', _rev: 0, drive_id: 'd' }, null);
      assert.deepEqual(
        (await store.find("o'clock", { drive_id: 'd' })).map((d) => d._id),
        ['a'],
      );
    } finally {
      await store.close();
    }
  });

  it('answers a filtered, sorted page from the collection’s index, without sorting', async () => {
    const path = join(dir, 'read.sqlite');
    const store = createSqliteReadStore({ path });
    await store.ensureIndex('jobs', ['drive_id', 'created_at']);
    await store.ensureIndex('projects', ['drive_id', 'created_at']);
    await store.close();
    const db = new Database(path, { readonly: true });
    try {
      const query = findSql('jobs', { drive_id: 'd1', created_at: { $lt: '2026' } }, { sort: [['created_at', -1]], limit: 10 });
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${query.text}`)
        .all(...query.params)
        .map((row) => (row as { detail: string }).detail)
        .join('\n');
      assert.match(plan, /USING INDEX docs_jobs_drive_id_created_at_/, plan);
      // Sorted by the index; only runs of equal `created_at` are ordered by id (the tie-break).
      assert.doesNotMatch(plan, /TEMP B-TREE FOR ORDER BY/, plan);
    } finally {
      db.close();
    }
  });

  it('counts a drive’s unfinished jobs by seeking each state in the jobs index, not reading all its jobs', async () => {
    const path = join(dir, 'read.sqlite');
    const store = createSqliteReadStore({ path });
    for (const fields of JOB_INDEXES) await store.ensureIndex(JOBS, fields);
    await store.close();
    const db = new Database(path, { readonly: true });
    try {
      const query = countSql(JOBS, { drive_id: 'd1', job_state: { $in: ['queued', 'running'] } });
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${query.text}`)
        .all(...query.params)
        .map((row) => (row as { detail: string }).detail)
        .join('\n');
      assert.match(plan, /USING INDEX docs_jobs_drive_id_job_state_\w+ \(<expr>=\? AND <expr>=\?\)/, plan);
    } finally {
      db.close();
    }
  });
});

describe('ReadStore: embedded, the API’s snapshot reads', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'read-store-snapshot-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads this process’s writes at once and another’s soon after, and never keeps the WAL from being copied back', async () => {
    const path = join(dir, 'read.sqlite');
    const store = createSqliteReadStore({ path, checkpoints: { idleMs: 50 } });
    const other = createSqliteReadStore({ path }); // another process's connection, as the replay CLI's
    const view = store.snapshotQueries(30);
    try {
      await store.put('jobs', { _id: 'a', _rev: 1, state: 'queued' }, null);
      assert.equal((await view.get('jobs', 'a'))?.state, 'queued');
      await store.put('jobs', { _id: 'a', _rev: 2, state: 'running' }, 1);
      assert.equal((await view.get('jobs', 'a'))?.state, 'running', 'a write of this process is read at once');

      await other.put('jobs', { _id: 'b', _rev: 1, state: 'queued' }, null);
      await waitFor(async () => (await view.get('jobs', 'b'))?.state === 'queued', { what: 'the other connection’s write' });
      // A document read before (and kept by the view) is read again once another connection changes it.
      await other.put('jobs', { _id: 'a', _rev: 3, state: 'done' }, 2);
      await waitFor(async () => (await view.get('jobs', 'a'))?.state === 'done', { what: 'the other connection’s update' });
      const copy = await view.get('jobs', 'a');
      copy!.state = 'changed by a caller';
      assert.equal((await view.get('jobs', 'a'))?.state, 'done', 'each caller gets a document of its own');
      assert.deepEqual(
        (await view.find('jobs', {}, { sort: [['state', 1]] })).map((d) => d._id),
        ['a', 'b'],
      );
      assert.equal(await view.sum('jobs', {}, '_rev'), 4);

      // Reads keep coming, and the snapshot still ends within its lag: the checkpoint completes.
      const reading = setInterval(() => void view.get('jobs', 'a'), 5);
      try {
        await store.putMany(
          Array.from({ length: 300 }, (_, i) => ({
            collection: 'jobs',
            doc: { _id: `j${i}`, _rev: 1, x: 'y'.repeat(300) },
            expectedRev: null,
          })),
        );
        const wal = () => readFileSync(`${path}-shm`).subarray(0, 100);
        await waitFor(() => wal().readUInt32LE(96) === wal().readUInt32LE(16), { timeoutMs: 5000, what: 'the WAL to be copied back' });
      } finally {
        clearInterval(reading);
      }
    } finally {
      await other.close();
      await store.close();
    }
  });

  it('keeps what its memo holds once full, reads the rest from the store, and empties it when something is committed', async () => {
    const store = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
    const docs = Array.from({ length: 10 }, (_, i) => ({
      collection: 'jobs',
      doc: { _id: `d${i}`, _rev: 1, n: i, pad: 'p'.repeat(200) },
      expectedRev: null,
    }));
    await store.putMany(docs);
    const view = store.snapshotQueries(10_000, 600); // room for two of these documents
    try {
      for (let i = 0; i < 10; i++) assert.equal((await view.get('jobs', `d${i}`))?.n, i);
      assert.deepEqual(store.snapshotMemo(), { entries: 2, hits: 0, misses: 10 });
      for (const i of [0, 1, 7]) assert.equal((await view.get('jobs', `d${i}`))?.n, i);
      assert.deepEqual(store.snapshotMemo(), { entries: 2, hits: 2, misses: 11 }, 'the first two stayed; the rest are read each time');
      await store.put('jobs', { _id: 'd0', _rev: 2, n: 100 }, 1); // this process's write ends the snapshot
      assert.equal((await view.get('jobs', 'd0'))?.n, 100);
      assert.deepEqual(store.snapshotMemo(), { entries: 1, hits: 2, misses: 12 }, 'the commit emptied the memo');
    } finally {
      await store.close();
    }
  });

  it('answers right when more documents are read than its memo holds', async () => {
    const store = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
    const view = store.snapshotQueries(30, 2000);
    try {
      const docs = Array.from({ length: 40 }, (_, i) => ({
        collection: 'jobs',
        doc: { _id: `d${i}`, _rev: 1, n: i, pad: 'p'.repeat(200) },
        expectedRev: null,
      }));
      await store.putMany(docs);
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 40; i++) assert.equal((await view.get('jobs', `d${i}`))?.n, i);
      }
      assert.equal(await view.get('jobs', 'missing'), null);
    } finally {
      await store.close();
    }
  });
});
