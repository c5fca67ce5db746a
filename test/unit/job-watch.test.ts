import assert from 'node:assert/strict';
import { createWatermark } from '../../lib/app/consistency';
import { createJobWatch } from '../../lib/app/job-watch';

/** A read the test answers when it likes: how the waker coalesces reads shows. */
function controlledReads() {
  const calls: { jobId: string; answer: (rev: number) => void }[] = [];
  return {
    calls,
    read: (jobId: string) => new Promise<{ rev: number } | null>((resolve) => calls.push({ jobId, answer: (rev) => resolve({ rev }) })),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('job watch: one waker for every job event stream', () => {
  it('reads a watched job once per move however many streams watch it, and hands each the result', async () => {
    const watermark = createWatermark();
    const reads = controlledReads();
    const watch = createJobWatch({ onMove: watermark.onMove, read: reads.read });
    const [a, b]: number[][] = [[], []];
    watch.watch('job-1', (j) => a.push(j!.rev));
    watch.watch('job-1', (j) => b.push(j!.rev));
    // The first watcher's read is in flight: the second one's is folded into one more after it.
    assert.equal(reads.calls.length, 1);
    reads.calls[0].answer(1);
    await settle();
    assert.equal(reads.calls.length, 2);
    reads.calls[1].answer(2);
    await settle();
    assert.deepEqual(a, [1, 2]);
    assert.deepEqual(b, [1, 2]);

    watermark.advance(10n);
    assert.equal(reads.calls.length, 3, 'one read for the move, not one per watcher');
    // Moves while a read is in flight make one read after it, not one each.
    watermark.advance(11n);
    watermark.advance(12n);
    reads.calls[2].answer(3);
    await settle();
    assert.equal(reads.calls.length, 4);
    reads.calls[3].answer(4);
    await settle();
    assert.equal(reads.calls.length, 4);
    assert.deepEqual(a, [1, 2, 3, 4]);
  });

  it('stops listening to the watermark when the last watcher leaves, and calls no one after', async () => {
    const watermark = createWatermark();
    let listening = 0;
    const onMove = (listener: () => void) => {
      listening += 1;
      const stop = watermark.onMove(listener);
      return () => ((listening -= 1), stop());
    };
    const watch = createJobWatch({ onMove, read: async (jobId) => jobId });
    const seen: string[] = [];
    const stopA = watch.watch('job-a', (j) => seen.push(j!));
    const stopB = watch.watch('job-b', (j) => seen.push(j!));
    assert.equal(listening, 1, 'one listener for every stream');
    assert.deepEqual(watch.size(), { jobs: 2, watchers: 2 });
    stopA();
    assert.equal(listening, 1);
    stopB();
    assert.equal(listening, 0);
    assert.deepEqual(watch.size(), { jobs: 0, watchers: 0 });
    await settle();
    seen.length = 0;
    watermark.advance(5n);
    await settle();
    assert.deepEqual(seen, []);
  });

  it('keeps waiting after a read that failed (the store down), and reads again at the next move', async () => {
    const watermark = createWatermark();
    let fail = true;
    const errors: string[] = [];
    const watch = createJobWatch({
      onMove: watermark.onMove,
      read: async () => {
        if (fail) throw new Error('down');
        return 'doc';
      },
      onError: (err) => errors.push((err as Error).message),
    });
    const seen: string[] = [];
    watch.watch('job-1', (j) => seen.push(j!));
    await settle();
    assert.deepEqual(errors, ['down']);
    fail = false;
    watermark.advance(1n);
    await settle();
    assert.deepEqual(seen, ['doc']);
  });
});
