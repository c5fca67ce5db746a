import assert from 'node:assert/strict';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import {
  createSessionPositions,
  createWatermark,
  positionValue,
  readYourWrites,
  trackAppends,
  type ReadFenceOutcome,
} from '../../lib/app/consistency';

describe('read-your-writes: watermark, session positions, hooks', () => {
  it('compares embedded row numbers and EventStoreDB commit/prepare positions by their commit part', () => {
    assert.equal(positionValue('42'), 42n);
    assert.equal(positionValue('1234/1200'), 1234n);
    assert.ok(positionValue('99999999999999999999/1') > positionValue('99999999999999999998/7'));
  });

  it('a wait resolves when the watermark passes its position, and never for an older one', async () => {
    const w = createWatermark(5n);
    assert.ok(w.passed(5n));
    assert.ok(!w.passed(6n));
    const waiting = w.waitFor(8n, 5_000);
    let settled = false;
    void waiting.then(() => (settled = true));
    w.advance(7n);
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'not yet at 8');
    w.advance(3n); // older: changes nothing
    assert.equal(w.current(), 7n);
    w.advance(9n);
    assert.equal(await waiting, true);
    assert.equal(w.moves(), 2);
  });

  it('a wait that is not met in time resolves false and is forgotten', async () => {
    const w = createWatermark(null);
    assert.equal(await w.waitFor(1n, 20), false);
    w.advance(1n); // nothing left to wake
    assert.equal(await w.waitFor(1n, 20), true);
  });

  it('keeps the newest write per token only, and forgets the least recent tokens beyond its capacity', () => {
    const s = createSessionPositions(2);
    s.wrote('a', 10n);
    s.wrote('a', 4n);
    assert.equal(s.lastWrite('a'), 10n);
    s.wrote('b', 1n);
    s.wrote('c', 1n);
    assert.equal(s.lastWrite('a'), undefined);
    assert.equal(s.lastWrite('c'), 1n);
  });

  it('a read waits only for its own token, only while its write is not projected, and says how it went', async () => {
    const w = createWatermark(0n);
    let last: bigint | null = null;
    const seen: ReadFenceOutcome[] = [];
    const hooks = readYourWrites({
      sessions: createSessionPositions(),
      watermark: w,
      lastAppended: () => last,
      timeoutMs: 50,
      observe: (outcome) => seen.push(outcome),
    });
    hooks.afterWrite('nothing-appended-yet');
    assert.equal(hooks.beforeRead('nothing-appended-yet'), undefined);
    last = 3n;
    hooks.afterWrite('writer');
    assert.equal(hooks.beforeRead('reader'), undefined, 'another token does not wait');
    const waiting = hooks.beforeRead('writer');
    assert.ok(waiting);
    w.advance(3n);
    assert.equal(await waiting, 'waited');
    assert.equal(hooks.beforeRead('writer'), undefined, 'projected: no wait at all');
    last = 4n;
    hooks.afterWrite('writer');
    assert.equal(await hooks.beforeRead('writer'), 'timed_out', 'a projector that never gets there: answered after the bound');
    assert.deepEqual(seen, ['waited', 'timed_out']);
  });

  it('tracks the position of the newest append made through the store', async () => {
    const store = trackAppends(createSqliteEventStore({ path: ':memory:' }));
    try {
      assert.equal(store.lastAppended(), null);
      const e = (id: string) => ({ id, type: 'T', data: {}, metadata: { partition_key: 'k' } });
      const first = await store.append('s-1', [e('00000000-0000-7000-8000-000000000001')], 'no_stream');
      assert.ok(first.ok);
      assert.equal(store.lastAppended(), positionValue(first.position));
      const conflict = await store.append('s-1', [e('00000000-0000-7000-8000-000000000002')], 'no_stream');
      assert.equal(conflict.ok, false);
      assert.equal(store.lastAppended(), positionValue(first.position), 'a conflict appends nothing');
      const both = await store.appendInOrder!([
        { streamId: 's-2', events: [e('00000000-0000-7000-8000-000000000003')], expected: 'no_stream' },
        { streamId: 's-3', events: [e('00000000-0000-7000-8000-000000000004')], expected: 'no_stream' },
      ]);
      const lastOk = both[1];
      assert.ok(lastOk.ok);
      assert.equal(store.lastAppended(), positionValue(lastOk.position));
      const undone = await store.appendAll!([
        { streamId: 's-4', events: [e('00000000-0000-7000-8000-000000000005')], expected: 'no_stream' },
        { streamId: 's-1', events: [e('00000000-0000-7000-8000-000000000006')], expected: 'no_stream' },
      ]);
      assert.equal(undone.ok, false);
      assert.equal(store.lastAppended(), positionValue(lastOk.position), 'a sequence undone appends nothing');
      const whole = await store.appendAll!([
        { streamId: 's-5', events: [e('00000000-0000-7000-8000-000000000007')], expected: 'no_stream' },
        { streamId: 's-6', events: [e('00000000-0000-7000-8000-000000000008')], expected: 'no_stream' },
      ]);
      assert.ok(whole.ok);
      assert.equal(store.lastAppended(), positionValue(whole.results[1].position));
      assert.equal((await store.readStream('s-1')).length, 1, 'reads are the store own');
    } finally {
      await store.close();
    }
  });
});
