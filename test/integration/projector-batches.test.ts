import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createSqliteDeadLetterStore } from '../../lib/adapters/embedded/dead-letters';
import { createEmbeddedEventLog } from '../../lib/adapters/embedded/event-log';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { createSqliteSearchIndex } from '../../lib/adapters/embedded/search-index';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import type { NewEvent } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { JOBS } from '../../lib/read-models/jobs';
import { PROJECTS } from '../../lib/read-models/projects';
import { startProjector } from '../../services/query-api/projector';
import { waitFor } from '../fixtures/wait';

/**
 * The projector applies what the log hands it in one turn together (services/query-api/projector.ts):
 * real SQLite files, the embedded log reading `$all`. Counted through the read store's writes.
 */

const AT = '2026-01-01T00:00:00.000Z';

const jobQueued = (jobId: string, projectId: string): NewEvent => ({
  id: `${jobId}-queued`,
  type: 'JobQueued',
  data: {
    job_id: jobId,
    job_type: 'import/project_media',
    drive_id: 'd',
    project_id: projectId,
    project_url: 'http://w/p',
    created_by: 'u',
    callback_url: null,
    request: { media: [], compositions: [] },
    created_at: AT,
  },
  metadata: { partition_key: projectId },
});

const projectCreated = (projectId: string, name: string): NewEvent => ({
  id: `${projectId}-created`,
  type: 'ProjectCreated',
  data: { project_id: projectId, drive_id: 'd', name, folder_path: '', team_access: 'none', created_by: 'u', job_id: null, created_at: AT },
  metadata: { partition_key: projectId },
});

/** The read store, its writes counted; `refuse` names documents whose writes fail (a poison event's). */
function counted(read: ReadStore, refuse: ReadonlySet<string> = new Set()) {
  const writes = { put: 0, together: 0, documents: 0 };
  const store: ReadStore = {
    ...read,
    async put(collection, doc, expectedRev) {
      if (refuse.has(doc._id)) throw new Error(`refused ${doc._id}`);
      writes.put += 1;
      writes.documents += 1;
      return read.put(collection, doc, expectedRev);
    },
    async putMany(docs) {
      if (docs.some((w) => refuse.has(w.doc._id))) throw new Error('refused a batch');
      writes.together += 1;
      writes.documents += docs.length;
      return read.putMany(docs);
    },
  };
  return { store, writes };
}

/** Flushes of the read store and the search index, refused while their flag is set. */
type FlushGate = { read: boolean; search: boolean; tries: number };

async function parts(dir: string, refuse: ReadonlySet<string>, gate: FlushGate = { read: false, search: false, tries: 0 }) {
  const logger = pino({ level: 'silent' });
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite'), pollIntervalMs: 20 });
  const deadLetters = createSqliteDeadLetterStore({ path: join(dir, 'events.sqlite') });
  const read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
  const search = createSqliteSearchIndex({ path: join(dir, 'search.sqlite') });
  const blobs = createLocalBlobStore({ root: join(dir, 'blobs') });
  const log = createEmbeddedEventLog({ store, logger, deadLetters, retryBaseMs: 20 });
  const { store: countedRead, writes } = counted(read, refuse);
  const refusing = (refused: () => boolean, flush: () => Promise<void>) => async () => {
    gate.tries += 1;
    if (refused()) throw new Error('cannot sync');
    return flush();
  };
  countedRead.flush = refusing(() => gate.read, read.flush);
  const gatedSearch = { ...search, flush: refusing(() => gate.search, search.flush) };
  const lags: string[] = [];
  const projector = await startProjector({
    log,
    read: countedRead,
    store,
    logger,
    search: { index: gatedSearch, blobs },
    observeLag: (model) => lags.push(model),
  });
  return { store, deadLetters, read, search, log, projector, writes, lags };
}

describe('projector batches', function () {
  this.timeout(20_000);
  let dir: string;

  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'projector-batches-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function withProjector(
    refuse: ReadonlySet<string>,
    run: (ready: Awaited<ReturnType<typeof parts>>) => Promise<void>,
    gate?: FlushGate,
  ) {
    const ready = await parts(dir, refuse, gate);
    try {
      await run(ready);
    } finally {
      await ready.projector.close();
      await ready.log.close();
      await ready.search.close();
      await ready.read.close();
      ready.deadLetters.close();
      await ready.store.close();
    }
  }

  it('writes the documents of events appended together in one transaction, not one commit each', async () => {
    await withProjector(new Set(), async ({ store, read, search, writes, lags }) => {
      const ids = Array.from({ length: 40 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
      // Counted from here: start-up wrote its marker. One append of many streams: one commit, one wake-up of the log.
      Object.assign(writes, { put: 0, together: 0, documents: 0 });
      await store.appendInOrder!(
        ids.flatMap((id, i) => [
          { streamId: `project-${id}`, events: [projectCreated(id, `Batch ${i}`)], expected: 'no_stream' as const },
          { streamId: `job-j${i}`, events: [jobQueued(`j${i}`, id)], expected: 'no_stream' as const },
        ]),
      );
      await waitFor(async () => (await read.count(JOBS, {})) === 40 && (await read.count(PROJECTS, {})) === 40, { timeoutMs: 10_000 });
      assert.equal(writes.documents, 80);
      assert.equal(writes.put, 0, 'no document written by itself');
      assert.ok(writes.together <= 4, `${writes.together} transactions for 80 documents of two models`);
      // Every event reported once per model that read it, and once for the search index.
      assert.equal(lags.filter((m) => m === JOBS).length, 40);
      assert.equal(lags.filter((m) => m === PROJECTS).length, 40);
      assert.equal(lags.filter((m) => m === 'search').length, 80);
      const found = await search.search({ drive_id: 'd', text: 'Batch', types: ['project'], sort: 'newest', limit: 100 });
      assert.equal(found.length, 40, 'each project indexed');
    });
  });

  it('dead-letters a poison event alone: the events delivered beside it are projected', async () => {
    const poison = 'ffffffff-0000-4000-8000-000000000000';
    await withProjector(new Set([poison]), async ({ store, read, deadLetters }) => {
      const ids = ['11111111-0000-4000-8000-000000000000', poison, '22222222-0000-4000-8000-000000000000'];
      await store.appendInOrder!(
        ids.map((id) => ({ streamId: `project-${id}`, events: [projectCreated(id, id)], expected: 'no_stream' as const })),
      );
      await waitFor(async () => (await deadLetters.list({ source: 'projections' })).length === 1, { timeoutMs: 10_000 });
      const [letter] = await deadLetters.list({ source: 'projections' });
      assert.equal(letter.event_id, `${poison}-created`);
      assert.ok(await read.get(PROJECTS, ids[0]));
      assert.ok(await read.get(PROJECTS, ids[2]));
      assert.equal(await read.get(PROJECTS, poison), null);
    });
  });

  it('moves its checkpoint past projected events only once the read store and the search index are flushed', async () => {
    const gate: FlushGate = { read: false, search: false, tries: 0 };
    await withProjector(
      new Set(),
      async ({ store, read }) => {
        // Started (its start-up rebuild flushed too); from here neither file can sync.
        Object.assign(gate, { read: true, search: true });
        const ids = Array.from({ length: 5 }, (_, i) => `33333333-0000-4000-8000-${String(i).padStart(12, '0')}`);
        await store.appendInOrder!(
          ids.map((id) => ({ streamId: `project-${id}`, events: [projectCreated(id, id)], expected: 'no_stream' as const })),
        );
        await waitFor(async () => (await read.count(PROJECTS, {})) === 5, { timeoutMs: 10_000 });
        const head = Number(store.headPosition());
        // Projected, and readable, but neither file synced: the checkpoint stays where it was.
        const triesFrom = gate.tries;
        await waitFor(() => gate.tries >= triesFrom + 2, { timeoutMs: 5_000, what: 'two checkpoints tried' });
        assert.equal(store.loadCheckpoint('projections'), null);
        // The read store synced, the search index not yet: still not past them.
        gate.read = false;
        const searchFrom = gate.tries;
        await waitFor(() => gate.tries >= searchFrom + 4, { timeoutMs: 5_000, what: 'two more checkpoints tried' });
        assert.equal(store.loadCheckpoint('projections'), null);
        gate.search = false;
        await waitFor(() => (store.loadCheckpoint('projections') ?? 0) >= head, { timeoutMs: 5_000, what: 'the checkpoint at the head' });
      },
      gate,
    );
  });
});
