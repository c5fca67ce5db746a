import assert from 'node:assert/strict';
import { awaitedUploads, decideJob, evolveJob, failedAttempts, initialJobState, type JobEvent, type JobResult } from '../../lib/domain/job';
import { specFor } from '../fixtures/given';

const given = specFor({ initialState: initialJobState, evolve: evolveJob, decide: decideJob });
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:00:05.000Z';
const T20 = '2026-01-01T00:00:20.000Z';
const LEASE = 15_000;
const job = {
  job_id: 'project-media-import-8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10',
  job_type: 'import/project_media' as const,
  drive_id: 'd',
  project_id: 'p',
  project_url: 'http://web/p',
  created_by: 'u',
  callback_url: null,
  request: { media: [], compositions: [] },
};
const success: JobResult = { status: 'success', media_status: {}, media_seconds_used: 0, created_compositions: [] };
const failure: JobResult = { status: 'error', error_code: 'internal_error', error_message: 'x' };
const queued: JobEvent = { type: 'JobQueued', data: { ...job, created_at: T0 } };
const startedBy = (worker: string, attempt: number, at: string, until: string): JobEvent => ({
  type: 'JobStarted',
  data: { job_id: job.job_id, attempt, started_at: at, worker_id: worker, lease_until: until },
});
const started = startedBy('w1', 1, T0, '2026-01-01T00:00:15.000Z');
const stopped: JobEvent = { type: 'JobStopped', data: { job_id: job.job_id, result: success, project_url: null, stopped_at: T1 } };
const cancelled: JobEvent = { type: 'JobCancelled', data: { job_id: job.job_id, stopped_at: T1 } };
const claim = (workerId: string, now: string) => ({ type: 'ClaimJob' as const, workerId, leaseMs: LEASE, now });

describe('job decider', () => {
  it('queues a new job', () => given().when({ type: 'QueueJob', job, now: T0 }).then([queued]));
  it('refuses to queue a job id twice', () => given(queued).when({ type: 'QueueJob', job, now: T0 }).thenRejects('conflict'));

  describe('claims', () => {
    it('claims a queued job as attempt 1 with a lease', () => given(queued).when(claim('w1', T0)).then([started]));
    it('refuses a second worker while the first one’s lease runs', () =>
      given(queued, started).when(claim('w2', T1)).thenRejects('conflict', { state: 'claimed' }));
    it('lets a second worker take over once the lease has lapsed, as the next attempt', () =>
      given(queued, started)
        .when(claim('w2', T20))
        .then([startedBy('w2', 2, T20, '2026-01-01T00:00:35.000Z')]));
    it('lets the same worker take over at once after its restart', () =>
      given(queued, started)
        .when(claim('w1', T1))
        .then([startedBy('w1', 2, T1, '2026-01-01T00:00:20.000Z')]));
    it('frees the claim when the attempt was interrupted by a shutdown', () => {
      const interrupted: JobEvent = { type: 'JobInterrupted', data: { job_id: job.job_id, attempt: 1, at: T1 } };
      given(queued, started, interrupted)
        .when(claim('w2', T1))
        .then([startedBy('w2', 2, T1, '2026-01-01T00:00:20.000Z')]);
    });
    it('renewing the lease keeps others out', () => {
      const renewed: JobEvent = {
        type: 'JobLeaseRenewed',
        data: { job_id: job.job_id, attempt: 1, lease_until: '2026-01-01T00:00:25.000Z' },
      };
      given(queued, started).when({ type: 'RenewLease', attempt: 1, leaseMs: LEASE, now: '2026-01-01T00:00:10.000Z' }).then([renewed]);
      given(queued, started, renewed).when(claim('w2', T20)).thenRejects('conflict', { state: 'claimed' });
    });
    it('a claim from before leases existed can be taken over', () =>
      given(queued, { type: 'JobStarted', data: { job_id: job.job_id, attempt: 1, started_at: T0 } })
        .when(claim('w2', T1))
        .then([startedBy('w2', 2, T1, '2026-01-01T00:00:20.000Z')]));
    it('does not claim a stopped or cancelled job', () => {
      given(queued, started, stopped).when(claim('w1', T1)).then([]);
      given(queued, cancelled).when(claim('w1', T1)).then([]);
    });
  });

  describe('fencing: only the attempt holding the claim writes', () => {
    const takenOver = startedBy('w2', 2, T20, '2026-01-01T00:00:35.000Z');
    it('drops the result, progress, renewal and charge of an attempt that lost its claim', () => {
      given(queued, started, takenOver).when({ type: 'StopJob', attempt: 1, result: success, projectUrl: null, now: T20 }).then([]);
      given(queued, started, takenOver).when({ type: 'ReportProgress', attempt: 1, label: 'x', percent: 5, now: T20 }).then([]);
      given(queued, started, takenOver).when({ type: 'RenewLease', attempt: 1, leaseMs: LEASE, now: T20 }).then([]);
      given(queued, started, takenOver).when({ type: 'ChargeMediaSeconds', attempt: 1, ref: 'a', seconds: 3, now: T20 }).then([]);
    });
    it('takes the current attempt’s result', () =>
      given(queued, started, takenOver).when({ type: 'StopJob', attempt: 2, result: success, projectUrl: null, now: T1 }).then([stopped]));
  });

  it('records progress while running, clamped to 0..100', () =>
    given(queued, started)
      .when({ type: 'ReportProgress', attempt: 1, label: 'importing', percent: 140.4, now: T1 })
      .then([{ type: 'JobProgressed', data: { job_id: job.job_id, label: 'importing', percent: 100, at: T1 } }]));
  it('ignores progress once cancelled', () =>
    given(queued, started, cancelled).when({ type: 'ReportProgress', attempt: 1, label: 'x', percent: 5, now: T1 }).then([]));

  it('charges media seconds on the job, once per media reference', () => {
    const charged: JobEvent = {
      type: 'MediaSecondsCharged',
      data: { drive_id: 'd', job_id: job.job_id, ref: 'constructor', seconds: 4, charged_at: T1 },
    };
    given(queued, started).when({ type: 'ChargeMediaSeconds', attempt: 1, ref: 'constructor', seconds: 4, now: T1 }).then([charged]);
    given(queued, started, charged).when({ type: 'ChargeMediaSeconds', attempt: 1, ref: 'constructor', seconds: 4, now: T1 }).then([]);
    given(queued, started).when({ type: 'ChargeMediaSeconds', attempt: 1, ref: 'a', seconds: 0, now: T1 }).then([]);
  });

  it('stops a running job with its result', () =>
    given(queued, started).when({ type: 'StopJob', attempt: 1, result: success, projectUrl: null, now: T1 }).then([stopped]));
  it('stops a job exactly once: a second result is dropped', () =>
    given(queued, started, stopped).when({ type: 'StopJob', attempt: 1, result: failure, projectUrl: null, now: T1 }).then([]));
  it('drops a result that arrives after cancellation', () =>
    given(queued, started, cancelled).when({ type: 'StopJob', attempt: 1, result: success, projectUrl: null, now: T1 }).then([]));

  it('cancels a queued job', () => given(queued).when({ type: 'CancelJob', now: T1 }).then([cancelled]));
  it('cancels a running job', () => given(queued, started).when({ type: 'CancelJob', now: T1 }).then([cancelled]));
  it('refuses to cancel a stopped job with conflict and its state', () =>
    given(queued, started, stopped).when({ type: 'CancelJob', now: T1 }).thenRejects('conflict', { state: 'stopped' }));
  it('refuses to cancel a cancelled job with conflict and its state', () =>
    given(queued, cancelled).when({ type: 'CancelJob', now: T1 }).thenRejects('conflict', { state: 'cancelled' }));
  it('records an interruption of the running attempt, and of nothing else', () => {
    const interrupted: JobEvent = { type: 'JobInterrupted', data: { job_id: job.job_id, attempt: 1, at: T1 } };
    given(queued, started).when({ type: 'InterruptJob', attempt: 1, now: T1 }).then([interrupted]);
    given(queued).when({ type: 'InterruptJob', attempt: 1, now: T1 }).then([]);
    given(queued, started, stopped).when({ type: 'InterruptJob', attempt: 1, now: T1 }).then([]);
  });
  it('counts failed attempts without the interrupted ones', () => {
    const restart = (attempt: number): JobEvent => startedBy('w1', attempt, T1, T20);
    const interrupted: JobEvent = { type: 'JobInterrupted', data: { job_id: job.job_id, attempt: 1, at: T1 } };
    const fold = (...events: JobEvent[]) => events.reduce(evolveJob, initialJobState());
    assert.equal(failedAttempts(fold(queued, started)), 0);
    assert.equal(failedAttempts(fold(queued, started, restart(2), restart(3))), 2);
    assert.equal(failedAttempts(fold(queued, started, interrupted, restart(2))), 0);
  });
  it('skips an event type it does not know (a newer version wrote it)', () => {
    const foreign = { type: 'JobAudited', data: { job_id: job.job_id } } as unknown as JobEvent;
    const state = [queued, started, foreign].reduce(evolveJob, initialJobState());
    assert.equal(state.status, 'running');
  });

  it('refuses to cancel a job that does not exist', () => given().when({ type: 'CancelJob', now: T1 }).thenRejects('not_found'));

  describe('uploads', () => {
    const upload = (asset: string) => ({
      upload: { asset_id: asset, artifact_id: `${asset}-art`, content_type: 'audio/wav', file_size: 10, expires_at: T20 },
      language: null,
    });
    const withUploads = {
      ...job,
      request: {
        media: [
          ['a.wav', upload('asset-a')],
          ['b.wav', upload('asset-b')],
          ['c.wav', { url: 'https://m.example/c.wav', language: null }],
        ] as const,
        compositions: [],
      },
    };
    const queuedWithUploads: JobEvent = { type: 'JobQueued', data: { ...withUploads, created_at: T0 } };
    const record = (ref: string, asset: string) => ({
      type: 'RecordUpload' as const,
      upload: { job_id: job.job_id, ref, asset_id: asset, blob_key: `k/${asset}`, size_bytes: 10 },
      now: T1,
    });
    const received = (ref: string, asset: string): JobEvent => ({
      type: 'UploadReceived',
      data: { job_id: job.job_id, ref, asset_id: asset, blob_key: `k/${asset}`, size_bytes: 10, received_at: T1 },
    });
    const fold = (...events: JobEvent[]) => events.reduce(evolveJob, initialJobState());

    it('records an upload of a queued job once', () => {
      given(queuedWithUploads)
        .when(record('a.wav', 'asset-a'))
        .then([received('a.wav', 'asset-a')]);
      given(queuedWithUploads, received('a.wav', 'asset-a')).when(record('a.wav', 'asset-a')).then([]);
    });
    it('refuses an upload the job does not have, or under another asset id', () => {
      given(queuedWithUploads).when(record('c.wav', 'asset-a')).thenRejects('not_found');
      given(queuedWithUploads).when(record('a.wav', 'asset-b')).thenRejects('not_found');
      given(queuedWithUploads).when(record('constructor', 'asset-a')).thenRejects('not_found');
    });
    it('refuses an upload once the job has started or was cancelled', () => {
      given(queuedWithUploads, started).when(record('a.wav', 'asset-a')).thenRejects('conflict', { state: 'running' });
      given(queuedWithUploads, cancelled).when(record('a.wav', 'asset-a')).thenRejects('conflict', { state: 'cancelled' });
    });
    it('records upload progress only while the job waits for that upload', () => {
      const progress = (ref: string) => ({
        type: 'RecordUploadProgress' as const,
        progress: { job_id: job.job_id, ref, bytes: 5, total: 10 },
        now: T1,
      });
      given(queuedWithUploads)
        .when(progress('a.wav'))
        .then([{ type: 'UploadProgressed', data: { job_id: job.job_id, ref: 'a.wav', bytes: 5, total: 10, at: T1 } }]);
      given(queuedWithUploads, received('a.wav', 'asset-a')).when(progress('a.wav')).then([]);
      given(queuedWithUploads, started).when(progress('a.wav')).then([]);
      given(queuedWithUploads).when(progress('c.wav')).then([]);
    });
    it('awaits the uploads that have not arrived until their URLs expire', () => {
      assert.deepEqual(awaitedUploads(fold(queuedWithUploads), T1), ['a.wav', 'b.wav']);
      assert.deepEqual(awaitedUploads(fold(queuedWithUploads, received('b.wav', 'asset-b')), T1), ['a.wav']);
      assert.deepEqual(awaitedUploads(fold(queuedWithUploads, received('b.wav', 'asset-b')), T20), []);
      assert.deepEqual(awaitedUploads(fold(queued), T1), []);
    });
  });
});
