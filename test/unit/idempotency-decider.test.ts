import assert from 'node:assert/strict';
import {
  IDEMPOTENCY_TTL_MS,
  idempotencyDecider,
  idempotencyVerdict,
  type IdempotencyEvent,
  type IdempotencyState,
  type RecordResponse,
} from '../../lib/domain/idempotency';
import { specFor } from '../fixtures/given';

const given = specFor(idempotencyDecider);
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T01:00:00.000Z';
const JUST_BEFORE_24H = '2026-01-01T23:59:59.999Z';
const T24H = '2026-01-02T00:00:00.000Z';
const FP = 'a'.repeat(64);
const OTHER_FP = 'b'.repeat(64);
const BODY = '{"job_id":"j1","project_id":"p1"}';

const record = (now: string, fingerprint = FP, body = BODY): RecordResponse => ({
  type: 'RecordResponse',
  token_id: 't-1',
  fingerprint,
  status: 201,
  body,
  now,
});
const recorded = (at: string, fingerprint = FP, body = BODY): IdempotencyEvent => ({
  type: 'IdempotentResponseRecorded',
  data: { token_id: 't-1', fingerprint, status: 201, body, recorded_at: at },
});
const fold = (...events: IdempotencyEvent[]): IdempotencyState =>
  events.reduce(idempotencyDecider.evolve, idempotencyDecider.initialState());

describe('idempotency decider', () => {
  it('records the first answer to a key', () => {
    given()
      .when(record(T0))
      .then([recorded(T0)]);
  });
  it('records nothing for the same request while its record lives: the first answer stands', () => {
    given(recorded(T0))
      .when(record(T1, FP, '{"job_id":"j2"}'))
      .then([]);
    given(recorded(T0)).when(record(JUST_BEFORE_24H)).then([]);
  });
  it('refuses another request with a live key as 422 unprocessable_entity', () => {
    given(recorded(T0)).when(record(T1, OTHER_FP)).thenRejects('unprocessable_entity');
  });
  it('treats a record 24 hours old as absent: a new answer is recorded after it, for any request', () => {
    assert.equal(IDEMPOTENCY_TTL_MS, 24 * 3600 * 1000);
    given(recorded(T0))
      .when(record(T24H))
      .then([recorded(T24H)]);
    given(recorded(T0))
      .when(record(T24H, OTHER_FP, '{"job_id":"j3"}'))
      .then([recorded(T24H, OTHER_FP, '{"job_id":"j3"}')]);
  });
  it('replays the latest record when the key was used again after an expiry', () => {
    given(recorded(T0), recorded(T24H, OTHER_FP)).when(record('2026-01-02T01:00:00.000Z', OTHER_FP)).then([]);
    given(recorded(T0), recorded(T24H, OTHER_FP)).when(record('2026-01-02T01:00:00.000Z', FP)).thenRejects('unprocessable_entity');
  });

  describe('verdict', () => {
    it('is absent for a key never used', () => {
      assert.deepEqual(idempotencyVerdict(fold(), FP, T0), { kind: 'absent' });
    });
    it('is replay, with the recorded status and body text, for the same fingerprint within 24 hours', () => {
      assert.deepEqual(idempotencyVerdict(fold(recorded(T0)), FP, T1), { kind: 'replay', status: 201, body: BODY });
      assert.deepEqual(idempotencyVerdict(fold(recorded(T0)), FP, JUST_BEFORE_24H).kind, 'replay');
    });
    it('is mismatch, saying when the key was used, for another fingerprint within 24 hours', () => {
      assert.deepEqual(idempotencyVerdict(fold(recorded(T0)), OTHER_FP, T1), { kind: 'mismatch', recordedAt: T0 });
    });
    it('is absent at 24 hours and after, whatever the fingerprint', () => {
      assert.deepEqual(idempotencyVerdict(fold(recorded(T0)), FP, T24H), { kind: 'absent' });
      assert.deepEqual(idempotencyVerdict(fold(recorded(T0)), OTHER_FP, '2026-03-01T00:00:00.000Z'), { kind: 'absent' });
    });
  });

  it('ignores an event type it does not know (written by a newer version)', () => {
    const state = fold(recorded(T0));
    assert.equal(idempotencyDecider.evolve(state, { type: 'KeyForgotten', data: {} } as never), state);
  });
});
