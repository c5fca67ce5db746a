import { deliveryDecider, type DeliveryEvent } from '../../lib/domain/delivery';
import { specFor } from '../fixtures/given';

const given = specFor(deliveryDecider);
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:00:01.000Z';
const T20 = '2026-01-01T00:00:20.000Z';
const SCHEDULE = [5, 60];
const delivery = { delivery_id: 'wh-1', job_id: 'j', drive_id: 'd', project_id: 'p', url: 'https://hooks.example/x' };
const scheduled: DeliveryEvent = { type: 'DeliveryScheduled', data: { ...delivery, due_at: T0, scheduled_at: T0 } };
const claimed = (attempt: number, at: string, worker = 'w1'): DeliveryEvent => ({
  type: 'DeliveryClaimed',
  data: { attempt, worker_id: worker, lease_until: new Date(Date.parse(at) + 30_000).toISOString(), at },
});
const attempted = (attempt: number, at: string, status: number | null, outcome: string, next: string | null): DeliveryEvent => ({
  type: 'DeliveryAttempted',
  data: {
    attempt,
    at,
    status,
    error: status === null ? 'refused' : null,
    duration_ms: 12,
    outcome: outcome as never,
    next_attempt_at: next,
  },
});
const claim = (now: string, workerId = 'w1') => ({ type: 'ClaimDelivery' as const, workerId, leaseMs: 30_000, now });
const record = (attempt: number, result: { status: number } | { error: string }, now = T1) => ({
  type: 'RecordAttempt' as const,
  attempt,
  result,
  durationMs: 12,
  scheduleSeconds: SCHEDULE,
  now,
});

describe('delivery decider', () => {
  it('schedules one delivery per job, due at once', () => {
    given().when({ type: 'ScheduleDelivery', delivery, now: T0 }).then([scheduled]);
    given(scheduled).when({ type: 'ScheduleDelivery', delivery, now: T1 }).then([]);
  });
  it('claims a due delivery as the next attempt, and refuses while another dispatcher holds it', () => {
    given(scheduled)
      .when(claim(T0))
      .then([claimed(1, T0)]);
    given(scheduled, claimed(1, T0)).when(claim(T1, 'w2')).thenRejects('conflict', { state: 'not_claimable' });
    given(scheduled, claimed(1, T0))
      .when(claim('2026-01-01T00:00:31.000Z', 'w2'))
      .then([claimed(2, '2026-01-01T00:00:31.000Z', 'w2')]);
  });
  it('records a 2xx as delivered, never to be claimed again', () => {
    given(scheduled, claimed(1, T0))
      .when(record(1, { status: 204 }))
      .then([attempted(1, T1, 204, 'delivered', null)]);
    given(scheduled, claimed(1, T0), attempted(1, T1, 204, 'delivered', null))
      .when(claim(T20))
      .thenRejects('conflict');
  });
  it('retries a failure on the schedule, then gives up when it is spent', () => {
    given(scheduled, claimed(1, T0))
      .when(record(1, { status: 500 }))
      .then([attempted(1, T1, 500, 'retry', '2026-01-01T00:00:06.000Z')]);
    const afterOne = [scheduled, claimed(1, T0), attempted(1, T1, 500, 'retry', '2026-01-01T00:00:06.000Z')];
    given(...afterOne)
      .when(claim('2026-01-01T00:00:05.000Z'))
      .thenRejects('conflict', { state: 'not_claimable' });
    given(...afterOne, claimed(2, T20))
      .when(record(2, { error: 'refused' }, T20))
      .then([attempted(2, T20, null, 'retry', '2026-01-01T00:01:20.000Z')]);
    const spent = [...afterOne, claimed(2, T20), attempted(2, T20, null, 'retry', '2026-01-01T00:01:20.000Z'), claimed(3, T20)];
    given(...spent)
      .when(record(3, { status: 503 }, T20))
      .then([attempted(3, T20, 503, 'failed', null)]);
  });
  it('stops on a 410', () =>
    given(scheduled, claimed(1, T0))
      .when(record(1, { status: 410 }))
      .then([attempted(1, T1, 410, 'gone', null)]));
  it('records nothing for an attempt that lost its claim', () =>
    given(scheduled, claimed(1, T0), claimed(2, '2026-01-01T00:00:31.000Z', 'w2'))
      .when(record(1, { status: 200 }))
      .then([]));
  it('delivers again on request, the schedule starting over', () => {
    const done = [scheduled, claimed(1, T0), attempted(1, T1, 410, 'gone', null)];
    given(...done)
      .when({ type: 'RequestRedelivery', by: 'u', now: T20 })
      .then([{ type: 'DeliveryRequested', data: { at: T20, by: 'u' } }]);
    given(...done, { type: 'DeliveryRequested', data: { at: T20, by: 'u' } })
      .when(claim(T20))
      .then([claimed(2, T20)]);
    given().when({ type: 'RequestRedelivery', by: 'u', now: T20 }).thenRejects('not_found');
  });
});
