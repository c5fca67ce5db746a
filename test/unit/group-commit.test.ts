import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore, type SqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { AppError } from '../../lib/domain/errors';
import type { AppendResult, NewEvent } from '../../lib/ports/event-store';

/**
 * Group commit in the embedded event store: appends issued together share one transaction (one
 * fsync), each keeps its own revision check, and each resolves only once its batch committed.
 * Run with the writer thread (the default for a file) and inline (an in-memory store's).
 */

const event = (type: string, data: Record<string, unknown> = {}): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { partition_key: 'p-1' },
});
const okResult = (r: AppendResult) => (r.ok ? r : assert.fail(`expected ok, got ${JSON.stringify(r)}`));

for (const writer of ['thread', 'inline'] as const) {
  describe(`embedded EventStore group commit (${writer} writer)`, () => {
    let dir: string;
    let path: string;
    let store: SqliteEventStore;

    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
      path = join(dir, 'events.sqlite');
      store = createSqliteEventStore({ path, writer });
    });
    afterEach(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('given 200 concurrent appends to distinct streams, all land in one commit with positions in issue order', async () => {
      const streams = Array.from({ length: 200 }, (_, i) => `s-${i}`);
      const results = (await Promise.all(streams.map((s) => store.append(s, [event('A')], 'no_stream')))).map(okResult);
      const positions = results.map((r) => Number(r.position));
      assert.deepEqual(
        positions,
        [...positions].sort((a, b) => a - b),
        'positions follow the order the appends were issued',
      );
      assert.equal(new Set(positions).size, 200);
      for (const s of streams) assert.equal((await store.readStream(s)).length, 1);
      assert.deepEqual(store.stats(), { appends: 200, commits: 1, largestBatch: 200 });
    });

    it('given 100 requests that each append twice in sequence (as the accept path does), commits twice, not 200 times', async () => {
      await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          okResult(await store.append(`project-${i}`, [event('ProjectCreated')], 'no_stream'));
          okResult(await store.append(`job-${i}`, [event('JobQueued')], 'no_stream'));
        }),
      );
      assert.deepEqual(store.stats(), { appends: 200, commits: 2, largestBatch: 100 });
    });

    it('given 100 requests that append project and job with appendInOrder (as the accept path now does), commits once', async () => {
      const made = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          store.appendInOrder([
            { streamId: `project-${i}`, events: [event('ProjectCreated')], expected: 'no_stream' },
            { streamId: `job-${i}`, events: [event('JobQueued')], expected: 'no_stream' },
          ]),
        ),
      );
      assert.ok(made.every((results) => results.length === 2 && results.every((r) => r.ok)));
      assert.deepEqual(store.stats(), { appends: 200, commits: 1, largestBatch: 200 });
    });

    it('never cuts an appendInOrder sequence between two batches, and skips what follows a failed append', async () => {
      const small = createSqliteEventStore({ path: join(dir, 'small.sqlite'), writer, maxBatch: 2 });
      try {
        okResult(await small.append('taken', [event('A')], 'no_stream'));
        const single = small.append('single', [event('A')], 'no_stream');
        const sequence = small.appendInOrder([
          { streamId: 'one', events: [event('A')], expected: 'no_stream' },
          { streamId: 'two', events: [event('A')], expected: 'no_stream' },
          { streamId: 'three', events: [event('A')], expected: 'no_stream' },
        ]);
        const refused = small.appendInOrder([
          { streamId: 'taken', events: [event('B')], expected: 'no_stream' },
          { streamId: 'after-taken', events: [event('A')], expected: 'no_stream' },
        ]);
        okResult(await single);
        assert.equal((await sequence).length, 3);
        assert.deepEqual(
          (await refused).map((r) => r.ok),
          [false],
        );
        assert.deepEqual(await small.readStream('after-taken'), []);
        assert.equal(small.stats().largestBatch, 4, 'the single append and the whole sequence of three');
      } finally {
        await small.close();
      }
    });

    it('appends a whole sequence (appendAll) or none of it, beside other appends of the same batch', async () => {
      okResult(await store.append('moved', [event('A')], 'no_stream'));
      const before = store.stats().commits;
      const [alone, made, undone, after] = await Promise.all([
        store.append('alone', [event('A')], 'no_stream'),
        store.appendAll([
          { streamId: 'w-one', events: [event('A'), event('B')], expected: 'no_stream' },
          { streamId: 'w-two', events: [event('C')], expected: 'no_stream' },
        ]),
        store.appendAll([
          { streamId: 'u-one', events: [event('A'), event('B')], expected: 'no_stream' },
          { streamId: 'u-two', events: [event('C')], expected: 'no_stream' },
          { streamId: 'moved', events: [event('B')], expected: 'no_stream' },
          { streamId: 'u-three', events: [event('D')], expected: 'no_stream' },
        ]),
        // Expects the revision the undone sequence would have left its first stream at.
        store.append('u-one', [event('E')], 1),
      ]);
      okResult(alone);
      assert.equal(store.stats().commits, before + 1, 'one commit for all of them');
      assert.ok(made.ok);
      assert.deepEqual(
        made.results.map((r) => r.nextRevision),
        [1, 0],
      );
      assert.ok(Number(made.results[0].position) < Number(made.results[1].position));
      assert.deepEqual(undone, { ok: false, index: 2, conflict: { expected: 'no_stream', actual: 0 } });
      for (const s of ['u-one', 'u-two', 'u-three']) assert.deepEqual(await store.readStream(s), [], `${s}: nothing of the sequence`);
      assert.deepEqual(after, { ok: false, conflict: { expected: 1, actual: 'no_stream' } });
      assert.equal((await store.readStream('moved')).length, 1);
      assert.equal((await store.readStream('w-one')).length, 2);
    });

    it('makes nothing of a whole sequence one of whose inserts fails, and fails it', async () => {
      const taken = event('A');
      okResult(await store.append('has-the-id', [taken], 'no_stream'));
      await assert.rejects(
        store.appendAll([
          { streamId: 'x-one', events: [event('A')], expected: 'no_stream' },
          { streamId: 'x-two', events: [{ ...taken }], expected: 'no_stream' },
        ]),
        /UNIQUE|constraint/i,
      );
      assert.deepEqual(await store.readStream('x-one'), []);
      okResult(await store.append('x-one', [event('B')], 'no_stream'));
    });

    it('given appends issued while a batch is being written, commits them together as the next batch', async () => {
      const first = Array.from({ length: 50 }, (_, i) => store.append(`a-${i}`, [event('A')], 'no_stream'));
      await new Promise((resolve) => setImmediate(resolve)); // the first batch has been handed to the writer
      const second = Array.from({ length: 50 }, (_, i) => store.append(`b-${i}`, [event('B')], 'no_stream'));
      (await Promise.all([...first, ...second])).forEach(okResult);
      assert.deepEqual(store.stats(), { appends: 100, commits: 2, largestBatch: 50 });
    });

    it('given racing appends to one stream in one batch, exactly one wins and the others get a conflict', async () => {
      const results = await Promise.all(Array.from({ length: 10 }, () => store.append('race', [event('Raced')], 'no_stream')));
      assert.equal(results.filter((r) => r.ok).length, 1);
      for (const r of results.filter((r) => !r.ok)) assert.deepEqual(r, { ok: false, conflict: { expected: 'no_stream', actual: 0 } });
      assert.equal((await store.readStream('race')).length, 1);
      assert.equal(store.stats().commits, 1, 'the conflicts did not fail the batch');
    });

    it('checks each expected revision against the earlier appends of the same batch', async () => {
      okResult(await store.append('s', [event('A')], 'no_stream'));
      const [chained, stale, next] = await Promise.all([
        store.append('s', [event('B')], 0),
        store.append('s', [event('B2')], 0),
        store.append('s', [event('C')], 1),
      ]);
      assert.equal(okResult(chained).nextRevision, 1);
      assert.deepEqual(stale, { ok: false, conflict: { expected: 0, actual: 1 } });
      assert.equal(okResult(next).nextRevision, 2);
      assert.deepEqual(
        (await store.readStream('s')).map((e) => [e.type, e.revision]),
        [
          ['A', 0],
          ['B', 1],
          ['C', 2],
        ],
      );
    });

    it('fails only the append whose insert fails, undoing all of its events, and commits the rest of the batch', async () => {
      const taken = event('Taken');
      okResult(await store.append('first', [taken], 'no_stream'));
      const [before, duplicate, partly, after] = await Promise.allSettled([
        store.append('before', [event('A')], 'no_stream'),
        store.append('dup', [{ ...taken }], 'no_stream'),
        store.append('partly', [event('P1'), { ...taken }], 'no_stream'),
        store.append('after', [event('B')], 'no_stream'),
      ]);
      assert.equal(before.status, 'fulfilled');
      assert.equal(after.status, 'fulfilled');
      assert.equal(duplicate.status, 'rejected');
      assert.equal(partly.status, 'rejected');
      assert.deepEqual(await store.readStream('partly'), [], 'the first event of the failed append was undone too');
      assert.equal((await store.readStream('after')).length, 1);
    });

    it('resolves an append only once its batch is committed, and wakes waiters after the commit', async () => {
      const woken = store.waitForAppend(10_000).then(() => store.readStream('seen'));
      okResult(await store.append('seen', [event('A')], 'no_stream'));
      assert.equal((await woken).length, 1, 'waiters read the committed event');
      const other = createSqliteEventStore({ path, writer: 'inline' });
      try {
        assert.equal((await other.readStream('seen')).length, 1, 'another connection sees it: it was committed');
      } finally {
        await other.close();
      }
    });

    it('commits appends still queued when the store is closed', async () => {
      const pending = store.append('late', [event('A')], 'no_stream');
      await store.close();
      okResult(await pending);
      store = createSqliteEventStore({ path, writer });
      assert.equal((await store.readStream('late')).length, 1);
    });

    it('rejects every append of a batch whose commit fails, writes none of them, and goes on afterwards', async () => {
      await store.close();
      store = createSqliteEventStore({ path, writer, maxPageCount: 64 });
      const big = { blob: 'x'.repeat(20_000) };
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => store.append(`big-${i}`, [event('Big', big)], 'no_stream')),
      );
      for (const r of results) {
        assert.equal(r.status, 'rejected');
        assert.ok(r.reason instanceof AppError && r.reason.code === 'unavailable', String(r.reason));
        assert.equal(r.reason.message, 'the event store cannot write: disk full');
      }
      assert.equal(store.headPosition(), 0, 'nothing of the failed batch was written');
      okResult(await store.append('small', [event('Small')], 'no_stream'));
    });
  });
}

describe('embedded EventStore group commit: an in-memory store', () => {
  it('commits concurrent appends together on its own connection', async () => {
    const store = createSqliteEventStore({ path: ':memory:' });
    try {
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.append(`m-${i}`, [event('A')], 'no_stream')));
      results.forEach(okResult);
      assert.equal(store.stats().commits, 1);
      assert.equal(store.headPosition(), 50);
    } finally {
      await store.close();
    }
  });
});
