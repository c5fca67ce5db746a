import assert from 'node:assert/strict';
import type { KafkaMessage } from 'kafkajs';
import { createLanes, type Pending } from '../../lib/adapters/kafka/consumer-lanes';

describe('Kafka consumer lanes', () => {
  const message = (offset: string) => ({ offset }) as KafkaMessage;

  /** Takes a message on in `partition`, as the batch handler does; a mark is recorded as one. */
  function take(lanes: ReturnType<typeof createLanes>, partition: number, offset: string, mark?: string): Pending {
    lanes.offsets.take(partition, offset);
    if (mark) lanes.seenMark(partition, offset, { position: mark, partitions: 1 });
    return { lane: lanes.laneOf(partition), message: message(offset), event: null };
  }

  it('tells a watermark listener a mark once everything before it in its partition settled, and on registration later', () => {
    const lanes = createLanes();
    const heard: bigint[] = [];
    lanes.onWatermark((position) => heard.push(position));
    const event = take(lanes, 0, '0');
    const mark = take(lanes, 0, '1', '42');
    lanes.settle(mark);
    assert.deepEqual(heard, [], 'the event before the mark has not settled');
    lanes.settle(event);
    assert.deepEqual(heard, [42n]);
    const late: bigint[] = [];
    lanes.onWatermark((position) => late.push(position));
    assert.deepEqual(late, [42n]);
  });

  it('forgets a lost partition: its lane is dropped, its in-flight messages counted, and a later settle changes nothing', () => {
    const lanes = createLanes();
    const lost = take(lanes, 1, '5');
    take(lanes, 0, '0');
    assert.equal(lanes.keepOnly([0]), 1);
    assert.equal(lost.lane.dropped, true);
    lanes.settle(lost);
    assert.equal(lanes.offsets.inFlight(), 1);
    assert.notEqual(lanes.laneOf(1), lost.lane, 'a partition assigned again starts a new lane');
  });

  it('wakes a batch handler waiting for room when a message settles', async () => {
    const lanes = createLanes();
    const p = take(lanes, 0, '0');
    const started = Date.now();
    const woken = lanes.changed(60_000);
    lanes.settle(p);
    await woken;
    assert.ok(Date.now() - started < 1_000);
  });
});
