import assert from 'node:assert/strict';
import { createMarkTracker, markOf, MARK_HEADER, MARK_PARTITIONS_HEADER } from '../../lib/adapters/kafka/marks';
import { positionValue } from '../../lib/ports/event-store';

describe('Kafka watermark marks', () => {
  const mark = (position: string, partitions = 2) => ({ position, partitions });

  it('reads a mark from its headers (Buffers as kafkajs gives them), and nothing else as one', () => {
    assert.deepEqual(markOf({ [MARK_HEADER]: Buffer.from('42'), [MARK_PARTITIONS_HEADER]: Buffer.from('4') }), mark('42', 4));
    assert.equal(markOf({ 'event-type': 'JobQueued' }), null);
    assert.equal(markOf(undefined), null);
  });

  it('knows a watermark only once every partition has reached a mark, and it is the least of them', () => {
    const t = createMarkTracker(positionValue);
    t.seen(0, 5n, mark('100'));
    t.settledBelow(0, 6n);
    assert.equal(t.watermark(), null, 'partition 1 has reached none');
    t.seen(1, 3n, mark('90'));
    t.settledBelow(1, 4n);
    assert.equal(t.watermark(), 90n);
  });

  it('reaches a mark only once everything before it in its partition has settled', () => {
    const t = createMarkTracker(positionValue);
    t.seen(0, 10n, mark('7/7', 1));
    t.settledBelow(0, 9n); // offset 9 (an event before the mark) has not settled
    assert.equal(t.watermark(), null);
    t.settledBelow(0, 11n);
    assert.equal(t.watermark(), 7n, 'EventStoreDB positions compare by their commit part');
    t.seen(0, 12n, mark('5/5', 1));
    t.settledBelow(0, 13n);
    assert.equal(t.watermark(), 7n, 'an older mark (a relay resending) moves nothing back');
  });
});

describe('Kafka partition marks (what a member of several records for the others)', () => {
  it('says which partition reached a higher position, and only when it rose', () => {
    const t = createMarkTracker(positionValue);
    t.seen(1, 4n, { position: '30', partitions: 4 });
    t.seen(1, 6n, { position: '50', partitions: 4 });
    assert.equal(t.settledBelow(1, 5n), 30n);
    assert.equal(t.settledBelow(1, 5n), null, 'nothing new settled');
    assert.equal(t.settledBelow(1, 7n), 50n);
    t.seen(1, 8n, { position: '40', partitions: 4 });
    assert.equal(t.settledBelow(1, 9n), null, 'an older mark is no rise');
    assert.deepEqual([...t.reached()], [[1, 50n]]);
    assert.equal(t.partitions(), 4);
  });
});
