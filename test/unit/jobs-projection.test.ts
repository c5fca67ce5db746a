import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { applyToDocument, foldDocument } from '../../lib/app/projection';
import type { StoredEvent } from '../../lib/ports/event-store';
import { evolveJobDoc, JOBS, renderJob } from '../../lib/read-models/jobs';

const JOB = 'project-media-import-8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10';

const jobsTarget = { collection: JOBS, evolve: evolveJobDoc };
let revision = 0;
const ev = (type: string, data: Record<string, unknown>): StoredEvent => ({
  id: randomUUID(),
  type,
  data: { job_id: JOB, ...data },
  metadata: { partition_key: 'p' },
  streamId: `job-${JOB}`,
  revision: revision++,
  position: String(revision),
  createdAt: '2026-01-01T00:00:00.000Z',
});

describe('jobs projection', () => {
  beforeEach(() => (revision = 0));
  const queued = () =>
    ev('JobQueued', {
      job_type: 'import/project_media',
      drive_id: 'd',
      project_id: 'p',
      project_url: 'http://w/p',
      created_by: 'u',
      callback_url: 'https://cb',
      request: { media: {} },
      created_at: 'T0',
    });

  it('given a queued job, when it starts and progresses, then the document is running with progress', () => {
    const doc = foldDocument(
      [
        queued(),
        ev('JobStarted', { attempt: 1, started_at: 'T1' }),
        ev('JobProgressed', { label: 'importing a.wav', percent: 40, at: 'T2' }),
      ],
      evolveJobDoc,
    );
    assert.deepEqual(renderJob(doc!), {
      job_id: JOB,
      job_type: 'import/project_media',
      job_state: 'running',
      created_at: 'T0',
      drive_id: 'd',
      project_id: 'p',
      project_url: 'http://w/p',
      progress: { label: 'importing a.wav', percent: 40, last_update_at: 'T2' },
    });
  });

  it('given a job with upload items, when queued, then it notes when the last upload URL expires, unrendered', () => {
    const upload = (asset: string, expires_at: string) => ({
      upload: { asset_id: asset, artifact_id: asset, content_type: 'audio/wav', file_size: 1, expires_at },
      language: null,
    });
    const media = [
      ['a.wav', upload('1', '2026-01-01T03:00:00.000Z')],
      ['b.wav', upload('2', '2026-01-01T03:00:01.000Z')],
      ['c.wav', { url: 'https://m/c.wav', language: null }],
    ];
    const withUploads = ev('JobQueued', { ...queued().data, request: { media, compositions: [] } });
    const doc = foldDocument([withUploads], evolveJobDoc)!;
    assert.equal(doc._uploads_until, '2026-01-01T03:00:01.000Z');
    assert.equal(renderJob(doc)._uploads_until, undefined);
    assert.equal(foldDocument([queued()], evolveJobDoc)!._uploads_until, undefined);
    const uploading = foldDocument([withUploads, ev('UploadProgressed', { ref: 'a.wav', bytes: 1, total: 4, at: 'T1' })], evolveJobDoc)!;
    assert.equal(uploading.job_state, 'running', 'bytes are arriving: the job is being worked on');
    assert.deepEqual(uploading.progress, { label: 'uploading a.wav', percent: 25, last_update_at: 'T1' });
    const started = foldDocument([withUploads, ev('JobStarted', { attempt: 1, started_at: 'T2' })], evolveJobDoc)!;
    assert.equal(started._uploads_until, undefined, 'a started job is no longer looked for at expiry');
    const cancelled = foldDocument([withUploads, ev('JobCancelled', { stopped_at: 'T2' })], evolveJobDoc)!;
    assert.equal(cancelled._uploads_until, undefined);
    assert.equal(
      foldDocument([queued(), ev('UploadProgressed', { ref: 'a.wav', bytes: 1, total: 4, at: 'T1' })], evolveJobDoc)!.job_state,
      'queued',
      'only a job waiting for uploads reads their progress',
    );
    const odd = ev('JobQueued', { ...queued().data, request: {} });
    assert.equal(foldDocument([odd], evolveJobDoc)!.job_state, 'queued', 'a request of another shape has no uploads');
  });

  it('given a running job, when it stops, then it has result and stopped_at, no progress, and the composition URL', () => {
    const doc = foldDocument(
      [
        queued(),
        ev('JobStarted', { attempt: 1, started_at: 'T1' }),
        ev('JobStopped', { result: { status: 'success' }, project_url: 'http://w/p/abcde', stopped_at: 'T3' }),
      ],
      evolveJobDoc,
    )!;
    assert.equal(doc.job_state, 'stopped');
    assert.equal(doc.stopped_at, 'T3');
    assert.deepEqual(doc.result, { status: 'success' });
    assert.equal(doc.project_url, 'http://w/p/abcde');
    assert.equal('progress' in doc, false);
    assert.equal('callback_url' in renderJob(doc), false, 'the callback URL is stored on the job, not shown');
  });

  it('given a running job, when it is cancelled, then it is cancelled with stopped_at and no result', () => {
    const doc = foldDocument(
      [queued(), ev('JobStarted', { attempt: 1, started_at: 'T1' }), ev('JobCancelled', { stopped_at: 'T2' })],
      evolveJobDoc,
    )!;
    assert.equal(doc.job_state, 'cancelled');
    assert.equal(doc.stopped_at, 'T2');
    assert.equal('result' in doc || 'progress' in doc, false);
  });

  it('is idempotent when an event is delivered twice', async () => {
    const read = createSqliteReadStore({ path: ':memory:' });
    const store = createSqliteEventStore({ path: ':memory:' });
    const deps = { read, store };
    const events = [queued(), ev('JobStarted', { attempt: 1, started_at: 'T1' })];
    assert.equal(await applyToDocument(deps, jobsTarget, JOB, events[0]), 'applied');
    assert.equal(await applyToDocument(deps, jobsTarget, JOB, events[1]), 'applied');
    const once = await read.get(JOBS, JOB);
    assert.equal(await applyToDocument(deps, jobsTarget, JOB, events[0]), 'duplicate');
    assert.equal(await applyToDocument(deps, jobsTarget, JOB, events[1]), 'duplicate');
    assert.deepEqual(await read.get(JOBS, JOB), once);
    await read.close();
    await store.close();
  });

  it('heals a gap by folding the stream from the store', async () => {
    const read = createSqliteReadStore({ path: ':memory:' });
    const store = createSqliteEventStore({ path: ':memory:' });
    const newEvents = [queued(), ev('JobStarted', { attempt: 1, started_at: 'T1' }), ev('JobCancelled', { stopped_at: 'T2' })];
    await store.append(
      `job-${JOB}`,
      newEvents.map(({ id, type, data, metadata }) => ({ id, type, data, metadata })),
      'no_stream',
    );
    const stored = await store.readStream(`job-${JOB}`);
    await applyToDocument({ read, store }, jobsTarget, JOB, stored[0]);
    assert.equal(await applyToDocument({ read, store }, jobsTarget, JOB, stored[2]), 'rebuilt');
    const doc = await read.get(JOBS, JOB);
    assert.equal(doc?.job_state, 'cancelled');
    assert.equal(doc?._rev, 2);
    await read.close();
    await store.close();
  });
});
