import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { EventStore, NewEvent, StoredEvent } from '../../lib/ports/event-store';
import { appendInOrder } from '../../lib/app/command-handler';
import { waitFor } from '../fixtures/wait';

/** One contract for every EventStore adapter (STYLE §11). */

export type EventStoreFactory = () => Promise<{ store: EventStore; cleanup: () => Promise<void> }>;

const event = (type: string, data: Record<string, unknown> = {}): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { partition_key: 'p-1', correlation_id: 'req-1' },
});

export function describeEventStoreContract(
  name: string,
  factory: EventStoreFactory,
  options: { before?: (this: Mocha.Context) => void } = {},
) {
  describe(`EventStore contract: ${name}`, function () {
    let store: EventStore;
    let cleanup: () => Promise<void>;
    let stream: string;

    if (options.before) before(options.before);
    beforeEach(async () => {
      ({ store, cleanup } = await factory());
      stream = `test-${randomUUID()}`;
    });
    afterEach(async () => cleanup?.());

    it('reads a stream that does not exist as empty', async () => {
      assert.deepEqual(await store.readStream(stream), []);
    });

    it('appends to a new stream with no_stream and reads the events back in order', async () => {
      const result = await store.append(stream, [event('A', { n: 1 }), event('B', { n: 2, nested: { ok: true } })], 'no_stream');
      assert.equal(result.ok, true);
      assert.equal(result.ok && result.nextRevision, 1);
      const read = await store.readStream(stream);
      assert.deepEqual(
        read.map((e) => [e.type, e.revision, e.data]),
        [
          ['A', 0, { n: 1 }],
          ['B', 1, { n: 2, nested: { ok: true } }],
        ],
      );
      assert.equal(read[0].streamId, stream);
      assert.equal(read[0].metadata.partition_key, 'p-1');
      assert.ok(!Number.isNaN(Date.parse(read[0].createdAt)));
    });

    it('reads a stream from a revision on: the tail after a state folded earlier', async () => {
      await store.append(stream, [event('A'), event('B'), event('C')], 'no_stream');
      await store.append(stream, [event('D')], 2);
      const types = async (fromRevision: number) => (await store.readStream(stream, { fromRevision })).map((e) => [e.revision, e.type]);
      assert.deepEqual(await types(0), [
        [0, 'A'],
        [1, 'B'],
        [2, 'C'],
        [3, 'D'],
      ]);
      assert.deepEqual(await types(2), [
        [2, 'C'],
        [3, 'D'],
      ]);
      assert.deepEqual(await types(3), [[3, 'D']]);
      assert.deepEqual(await types(4), [], 'past the last event: nothing, not an error');
      assert.deepEqual(await store.readStream(`test-${randomUUID()}`, { fromRevision: 2 }), [], 'no stream');
    });

    it('reports a conflict as a value when the expected revision is wrong', async () => {
      await store.append(stream, [event('A')], 'no_stream');
      const again = await store.append(stream, [event('B')], 'no_stream');
      assert.deepEqual(again, { ok: false, conflict: { expected: 'no_stream', actual: 0 } });
      const stale = await store.append(stream, [event('B')], 5);
      assert.deepEqual(stale, { ok: false, conflict: { expected: 5, actual: 0 } });
      const missing = await store.append(`test-${randomUUID()}`, [event('B')], 0);
      assert.equal(missing.ok, false);
      assert.equal(!missing.ok && missing.conflict.actual, 'no_stream');
      assert.equal((await store.readStream(stream)).length, 1, 'nothing was written by the refused appends');
    });

    it('appends with the right expected revision and with any', async () => {
      await store.append(stream, [event('A')], 'no_stream');
      assert.equal((await store.append(stream, [event('B')], 0)).ok, true);
      assert.equal((await store.append(stream, [event('C')], 'any')).ok, true);
      assert.deepEqual(
        (await store.readStream(stream)).map((e) => e.type),
        ['A', 'B', 'C'],
      );
    });

    it('lets exactly one of two concurrent appends at the same revision win', async () => {
      await store.append(stream, [event('A')], 'no_stream');
      const results = await Promise.all([store.append(stream, [event('B1')], 0), store.append(stream, [event('B2')], 0)]);
      assert.equal(results.filter((r) => r.ok).length, 1);
      assert.equal((await store.readStream(stream)).length, 2);
    });

    it('appends to several streams in order (appendInOrder), the later ones after the earlier in $all', async () => {
      const [first, second] = [`${stream}-first`, `${stream}-second`];
      const made = await appendInOrder(store, [
        { streamId: first, events: [event('A'), event('B')], expected: 'no_stream' },
        { streamId: second, events: [event('C')], expected: 'no_stream' },
      ]);
      assert.deepEqual(
        made.map((r) => r.ok),
        [true, true],
      );
      const [a, c] = [(await store.readStream(first))[0], (await store.readStream(second))[0]];
      assert.ok(BigInt(a.position) < BigInt(c.position), 'the first stream’s events come first in $all');
    });

    it('stops appendInOrder at the first conflict: the appends after it are not made', async () => {
      const [taken, next] = [`${stream}-taken`, `${stream}-next`];
      await store.append(taken, [event('A')], 'no_stream');
      const made = await appendInOrder(store, [
        { streamId: taken, events: [event('B')], expected: 'no_stream' },
        { streamId: next, events: [event('C')], expected: 'no_stream' },
      ]);
      assert.deepEqual(made, [{ ok: false, conflict: { expected: 'no_stream', actual: 0 } }]);
      assert.deepEqual(await store.readStream(next), []);
      assert.equal((await store.readStream(taken)).length, 1);
    });

    it('appends to several streams all or nothing (appendAll, where the store has it)', async function () {
      if (!store.appendAll) return this.skip(); // EventStoreDB: one stream per append
      const [one, two, taken, three] = [`${stream}-one`, `${stream}-two`, `${stream}-taken`, `${stream}-three`];
      const made = await store.appendAll([
        { streamId: one, events: [event('A'), event('B')], expected: 'no_stream' },
        { streamId: two, events: [event('C')], expected: 'no_stream' },
      ]);
      assert.ok(made.ok);
      assert.deepEqual(
        made.results.map((r) => r.nextRevision),
        [1, 0],
      );
      assert.ok(BigInt(made.results[0].position) < BigInt(made.results[1].position));
      await store.append(taken, [event('T')], 'no_stream');
      const undone = await store.appendAll([
        { streamId: one, events: [event('D')], expected: 1 },
        { streamId: taken, events: [event('E')], expected: 'no_stream' },
        { streamId: three, events: [event('F')], expected: 'no_stream' },
      ]);
      assert.deepEqual(undone, { ok: false, index: 1, conflict: { expected: 'no_stream', actual: 0 } });
      assert.equal((await store.readStream(one)).length, 2, 'the append before the conflict was undone');
      assert.deepEqual(await store.readStream(three), []);
      assert.equal((await store.readStream(taken)).length, 1);
    });

    it('reads $all in order from a position, excluding the event at that position', async () => {
      const other = `test-${randomUUID()}`;
      await store.append(stream, [event('A')], 'no_stream');
      await store.append(other, [event('B')], 'no_stream');
      await store.append(stream, [event('C')], 0);
      const mine = (all: StoredEvent[]) => all.filter((e) => e.streamId === stream || e.streamId === other);
      const all = mine(await readEverything(store));
      assert.deepEqual(
        all.map((e) => e.type),
        ['A', 'B', 'C'],
      );
      const afterFirst = mine(await store.readAll(all[0].position, 100));
      assert.deepEqual(
        afterFirst.map((e) => e.type),
        ['B', 'C'],
      );
    });

    it('follows $all live, including events appended after subscribing', async () => {
      await store.append(stream, [event('A')], 'no_stream');
      const seen: string[] = [];
      const head = (await readEverything(store)).at(-1)!.position;
      const sub = store.subscribeAll(null, async (e) => {
        if (e.streamId === stream) seen.push(e.type);
      });
      try {
        await waitFor(() => seen.length === 1, { what: 'existing event' });
        await store.append(stream, [event('B'), event('C')], 0);
        await waitFor(() => seen.length === 3, { what: 'live events' });
        assert.deepEqual(seen, ['A', 'B', 'C']);
      } finally {
        await sub.close();
      }
      const seenAfter: string[] = [];
      const sub2 = store.subscribeAll(head, async (e) => {
        if (e.streamId === stream) seenAfter.push(e.type);
      });
      try {
        await waitFor(() => seenAfter.length === 2, { what: 'events after the head' });
        assert.deepEqual(seenAfter, ['B', 'C']);
      } finally {
        await sub2.close();
      }
    });

    it('awaits the handler before delivering the next event', async () => {
      await store.append(stream, [event('A'), event('B'), event('C')], 'no_stream');
      let running = 0;
      let maxRunning = 0;
      const seen: string[] = [];
      const sub = store.subscribeAll(null, async (e) => {
        if (e.streamId !== stream) return;
        running++;
        maxRunning = Math.max(maxRunning, running);
        await new Promise((r) => setTimeout(r, 5));
        seen.push(e.type);
        running--;
      });
      try {
        await waitFor(() => seen.length === 3);
        assert.equal(maxRunning, 1);
      } finally {
        await sub.close();
      }
    });
  });
}

async function readEverything(store: EventStore): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await store.readAll(after, 500);
    if (page.length === 0) return out;
    out.push(...page);
    after = page[page.length - 1].position;
  }
}
