import assert from 'node:assert/strict';
import { decideJob, evolveJob, failedAttempts, initialJobState, type JobEvent } from '../../lib/domain/job';
import { specFor } from '../fixtures/given';

const given = specFor({ initialState: initialJobState, evolve: evolveJob, decide: decideJob });
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:00:05.000Z';
const job = {
  job_id: 'project-media-import-8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10',
  job_type: 'import/project_media' as const,
  drive_id: 'd',
  project_id: 'p',
  project_url: 'http://web/p',
  created_by: 'u',
  callback_url: null,
  request: {},
};
const queued: JobEvent = { type: 'JobQueued', data: { ...job, created_at: T0 } };
const started: JobEvent = { type: 'JobStarted', data: { job_id: job.job_id, attempt: 1, started_at: T0 } };
const stopped: JobEvent = {
  type: 'JobStopped',
  data: { job_id: job.job_id, result: { status: 'success' }, project_url: null, stopped_at: T1 },
};
const cancelled: JobEvent = { type: 'JobCancelled', data: { job_id: job.job_id, stopped_at: T1 } };

describe('job decider', () => {
  it('queues a new job', () => given().when({ type: 'QueueJob', job, now: T0 }).then([queued]));
  it('refuses to queue a job id twice', () => given(queued).when({ type: 'QueueJob', job, now: T0 }).thenRejects('conflict'));

  it('starts a queued job as attempt 1', () => given(queued).when({ type: 'StartJob', now: T0 }).then([started]));
  it('restarts a running job (after a crash) as the next attempt', () =>
    given(queued, started)
      .when({ type: 'StartJob', now: T1 })
      .then([{ type: 'JobStarted', data: { job_id: job.job_id, attempt: 2, started_at: T1 } }]));
  it('does not start a stopped job', () => given(queued, started, stopped).when({ type: 'StartJob', now: T1 }).then([]));
  it('does not start a cancelled job', () => given(queued, cancelled).when({ type: 'StartJob', now: T1 }).then([]));

  it('records progress while running, clamped to 0..100', () =>
    given(queued, started)
      .when({ type: 'ReportProgress', label: 'importing', percent: 140.4, now: T1 })
      .then([{ type: 'JobProgressed', data: { job_id: job.job_id, label: 'importing', percent: 100, at: T1 } }]));
  it('ignores progress once cancelled', () =>
    given(queued, started, cancelled).when({ type: 'ReportProgress', label: 'x', percent: 5, now: T1 }).then([]));

  it('stops a running job with its result', () =>
    given(queued, started)
      .when({ type: 'StopJob', result: { status: 'success' }, projectUrl: null, now: T1 })
      .then([stopped]));
  it('stops a job exactly once: a second result is dropped', () =>
    given(queued, started, stopped)
      .when({ type: 'StopJob', result: { status: 'error' }, projectUrl: null, now: T1 })
      .then([]));
  it('drops a result that arrives after cancellation', () =>
    given(queued, started, cancelled)
      .when({ type: 'StopJob', result: { status: 'success' }, projectUrl: null, now: T1 })
      .then([]));

  it('cancels a queued job', () => given(queued).when({ type: 'CancelJob', now: T1 }).then([cancelled]));
  it('cancels a running job', () => given(queued, started).when({ type: 'CancelJob', now: T1 }).then([cancelled]));
  it('refuses to cancel a stopped job with conflict and its state', () =>
    given(queued, started, stopped).when({ type: 'CancelJob', now: T1 }).thenRejects('conflict', { state: 'stopped' }));
  it('refuses to cancel a cancelled job with conflict and its state', () =>
    given(queued, cancelled).when({ type: 'CancelJob', now: T1 }).thenRejects('conflict', { state: 'cancelled' }));
  it('records an interruption of a running job, and of nothing else', () => {
    const interrupted: JobEvent = { type: 'JobInterrupted', data: { job_id: job.job_id, attempt: 1, at: T1 } };
    given(queued, started).when({ type: 'InterruptJob', now: T1 }).then([interrupted]);
    given(queued).when({ type: 'InterruptJob', now: T1 }).then([]);
    given(queued, started, stopped).when({ type: 'InterruptJob', now: T1 }).then([]);
  });
  it('counts failed attempts without the interrupted ones', () => {
    const restart = (attempt: number): JobEvent => ({ type: 'JobStarted', data: { job_id: job.job_id, attempt, started_at: T1 } });
    const interrupted: JobEvent = { type: 'JobInterrupted', data: { job_id: job.job_id, attempt: 1, at: T1 } };
    const fold = (...events: JobEvent[]) => events.reduce(evolveJob, initialJobState());
    assert.equal(failedAttempts(fold(queued, started)), 0);
    assert.equal(failedAttempts(fold(queued, started, restart(2), restart(3))), 2);
    assert.equal(failedAttempts(fold(queued, started, interrupted, restart(2))), 0);
  });

  it('refuses to cancel a job that does not exist', () => given().when({ type: 'CancelJob', now: T1 }).thenRejects('not_found'));
});
