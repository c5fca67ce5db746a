import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { turnBatches } from '../../lib/app/turn-batch';

describe('turnBatches', () => {
  it('handles what was handed over in one turn as one batch, after the turn', async () => {
    const batches: number[][] = [];
    const handle = turnBatches<number>(
      async (items) => void batches.push([...items]),
      async () => assert.fail('nothing fails'),
    );
    const first = [1, 2, 3].map(handle);
    assert.deepEqual(batches, [], 'nothing is handled within the turn');
    await Promise.all(first);
    await Promise.all([4, 5].map(handle));
    assert.deepEqual(batches, [
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('runs one batch at a time: what comes while one runs waits for the next, in order', async () => {
    const log: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const handle = turnBatches<string>(
      async (items) => {
        log.push(`start ${items.join(',')}`);
        if (items.includes('a')) await held;
        log.push(`end ${items.join(',')}`);
      },
      async () => assert.fail('nothing fails'),
    );
    const a = handle('a');
    await nextTurn();
    await nextTurn();
    const later = [handle('b'), handle('c')];
    await nextTurn();
    await nextTurn();
    assert.deepEqual(log, ['start a'], 'b and c wait while a runs');
    release();
    await Promise.all([a, ...later]);
    assert.deepEqual(log, ['start a', 'end a', 'start b,c', 'end b,c']);
  });

  it('handles each item alone when the batch fails: only the one that fails alone rejects', async () => {
    const alone: number[] = [];
    const batched: number[][] = [];
    const handle = turnBatches<number>(
      async (items) => {
        if (items.includes(2)) throw new Error('the batch failed');
        batched.push([...items]);
      },
      async (item) => {
        alone.push(item);
        if (item === 2) throw new Error(`poison ${item}`);
      },
    );
    const outcomes = await Promise.allSettled([1, 2, 3].map(handle));
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /poison 2/);
    assert.deepEqual(alone, [1, 2, 3]);
    // And it goes on batching afterwards.
    await Promise.all([7, 8].map(handle));
    assert.deepEqual(batched, [[7, 8]]);
  });
});
