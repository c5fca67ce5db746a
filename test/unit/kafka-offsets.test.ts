import assert from 'node:assert/strict';
import { createOffsetTracker, type OffsetTracker } from '../../lib/adapters/kafka/offsets';

/** The Kafka consumer's commit rule: per partition, the low-water mark of settled messages. */

function given(taken: Record<number, number[]>): OffsetTracker {
  const t = createOffsetTracker();
  for (const [partition, offsets] of Object.entries(taken)) for (const offset of offsets) t.take(Number(partition), String(offset));
  return t;
}

const settle = (t: OffsetTracker, partition: number, ...offsets: number[]) => offsets.forEach((o) => t.settle(partition, String(o)));

describe('Kafka offsets: the low-water mark of settled messages', () => {
  it('commits one past the last message once every message settled', () => {
    const t = given({ 0: [10, 11, 12] });
    settle(t, 0, 10, 11, 12);
    assert.deepEqual(t.due(), [{ partition: 0, offset: '13' }]);
    assert.equal(t.inFlight(), 0);
  });

  it('keeps the mark right across a deep backlog settled in waves (entries dropped in chunks)', () => {
    const offsets = Array.from({ length: 5000 }, (_, i) => 100 + i);
    const t = given({ 0: offsets });
    settle(t, 0, ...offsets.slice(0, 3000).filter((o) => o !== 2100)); // one long job among them
    assert.deepEqual(t.due(), [{ partition: 0, offset: '2100' }]);
    assert.equal(t.inFlight(), 2001);
    assert.equal(t.retainOnly([0]), 0);
    settle(t, 0, 2100);
    assert.deepEqual(t.due(), [{ partition: 0, offset: '3100' }]);
    settle(t, 0, ...offsets.slice(3000));
    assert.deepEqual(t.due(), [{ partition: 0, offset: '5100' }]);
    assert.equal(t.inFlight(), 0);
    t.take(0, '5100');
    assert.equal(t.lowWater(0), 5100n);
    assert.equal(t.retainOnly([]), 1, 'one unsettled message was in flight on the partition given up');
  });

  it('does not commit past a message that has not settled, however many after it have', () => {
    const t = given({ 0: [10, 11, 12, 13] });
    settle(t, 0, 10, 12, 13); // 11 is a long job
    assert.deepEqual(t.due(), [{ partition: 0, offset: '11' }]);
    assert.equal(t.inFlight(), 1);
    settle(t, 0, 11);
    assert.deepEqual(t.due(), [{ partition: 0, offset: '14' }]);
  });

  it('keeps partitions apart: a pending message holds back only its own partition', () => {
    const t = given({ 0: [5, 6], 1: [7, 8] });
    settle(t, 1, 7, 8);
    settle(t, 0, 6);
    assert.deepEqual(t.due(), [
      { partition: 0, offset: '5' },
      { partition: 1, offset: '9' },
    ]);
  });

  it('lists a partition again only once its mark moved past the last commit', () => {
    const t = given({ 0: [0, 1], 1: [0] });
    settle(t, 0, 0);
    settle(t, 1, 0);
    const first = t.due();
    t.committed(first);
    assert.deepEqual(t.due(), [], 'nothing new settled');
    settle(t, 0, 1);
    assert.deepEqual(t.due(), [{ partition: 0, offset: '2' }]);
  });

  it('handles offsets beyond 2^53 exactly', () => {
    const big = 2n ** 60n;
    const t = createOffsetTracker();
    t.take(0, big.toString());
    t.settle(0, big.toString());
    assert.deepEqual(t.due(), [{ partition: 0, offset: (big + 1n).toString() }]);
  });

  it('skips gaps in offsets (compacted topics, transaction markers)', () => {
    const t = given({ 0: [3, 7, 20] });
    settle(t, 0, 3, 7);
    assert.deepEqual(t.due(), [{ partition: 0, offset: '20' }]);
  });

  it('knows which offsets are already taken on, so a refetch after a rejoin is not delivered twice', () => {
    const t = given({ 0: [4, 5] });
    assert.equal(t.isTaken(0, '4'), true);
    assert.equal(t.isTaken(0, '5'), true);
    assert.equal(t.isTaken(0, '6'), false);
    assert.equal(t.isTaken(1, '0'), false);
    assert.throws(() => t.take(0, '5'), /out of order/);
  });

  it('forgets revoked partitions: their messages are no longer in flight and never committed', () => {
    const t = given({ 0: [1, 2], 1: [1, 2, 3] });
    settle(t, 1, 1);
    assert.equal(t.inFlight(), 4);
    assert.equal(t.retainOnly([0]), 2, 'the unsettled messages of partition 1');
    assert.equal(t.inFlight(), 2);
    assert.equal(t.settle(1, '2'), false, 'a job of the revoked partition settling later changes nothing');
    assert.deepEqual(
      t.due().map((d) => d.partition),
      [0],
    );
    assert.equal(t.isTaken(1, '2'), false, 'if the partition comes back, its messages are taken on again');
  });

  it('forgets everything when the member left the group', () => {
    const t = given({ 0: [1], 1: [1] });
    t.retainOnly([]);
    assert.equal(t.inFlight(), 0);
    assert.deepEqual(t.due(), []);
  });

  it('ignores a settle it does not know or has seen', () => {
    const t = given({ 0: [1] });
    assert.equal(t.settle(0, '9'), false);
    assert.equal(t.settle(0, '1'), true);
    assert.equal(t.settle(0, '1'), false);
    assert.equal(t.inFlight(), 0);
  });

  it('reports lag as high watermark minus the low-water mark, or null before any batch', () => {
    const t = createOffsetTracker();
    assert.equal(t.lag(), null);
    t.take(0, '10');
    t.take(0, '11');
    t.sawHighWatermark(0, '20');
    t.take(1, '0');
    t.settle(1, '0');
    t.sawHighWatermark(1, '1');
    assert.equal(t.lag(), 10, 'partition 0: 20 − 10; partition 1: caught up');
    t.settle(0, '10');
    assert.equal(t.lag(), 9);
  });
});
