import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { startHarness, type Harness } from '../fixtures/harness';
import { waitFor } from '../fixtures/wait';
import { replayReadModels } from '../../services/query-api/replay';

describe('jobs: cancel, list, existing projects, sequences (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'media-'));
    const [wav, long] = await Promise.all([makeTestMedia(dir, 'wav', 1), makeTestMedia(dir, 'wav', 30)]);
    media = await startMediaServer({ 'a.wav': wav, 'long.wav': long });
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  const startImport = async (body: Record<string, unknown>, token?: string) => {
    const res = await h.http.post('/v1/jobs/import/project_media').set(h.auth(token)).send(body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body as { job_id: string; project_id: string };
  };

  describe('DELETE /v1/jobs/{job_id}', () => {
    it('cancels a running import: 204, job cancelled with stopped_at, download stopped', async () => {
      const { job_id } = await startImport({ project_name: 'Slow', add_media: { 'long.wav': { url: media.url('slow', 'long.wav') } } });
      const running = await h.waitForJob(job_id, (j) => j.job_state === 'running' && (j.progress as { percent: number })?.percent > 0);
      assert.equal(typeof (running.progress as Record<string, unknown>).label, 'string');
      assert.ok((running.progress as Record<string, unknown>).last_update_at);

      const del = await h.http.delete(`/v1/jobs/${job_id}`).set(h.auth());
      assert.equal(del.status, 204);
      const job = await h.waitForJob(job_id, (j) => j.job_state === 'cancelled');
      assert.ok(job.stopped_at);
      assert.equal(job.result, undefined);
      assert.equal(job.progress, undefined);
      await waitFor(() => media.aborted.some((u) => u.includes('long.wav')), { timeoutMs: 5000, what: 'the download to be aborted' });

      const again = await h.http.delete(`/v1/jobs/${job_id}`).set(h.auth());
      assert.equal(again.status, 409);
      assert.deepEqual(Object.keys(again.body).sort(), ['error', 'message', 'state']);
      assert.equal(again.body.error, 'conflict');
      assert.equal(again.body.state, 'cancelled');

      // The processor must not stop the job afterwards.
      const stream = await h.store.readStream(`job-${job_id}`);
      assert.equal(stream.filter((e) => e.type === 'JobStopped').length, 0);
    });

    it('cancels a queued job (no processor running): 204, then cancelled and never started', async () => {
      const idle = await startHarness({ processors: false });
      try {
        const res = await idle.http
          .post('/v1/jobs/import/project_media')
          .set(idle.auth())
          .send({ project_name: 'Waiting', add_media: { 'a.wav': { url: media.url('file', 'a.wav') } } });
        assert.equal((await idle.http.get(`/v1/jobs/${res.body.job_id}`).set(idle.auth())).body.job_state, 'queued');
        assert.equal((await idle.http.delete(`/v1/jobs/${res.body.job_id}`).set(idle.auth())).status, 204);
        const job = await idle.waitForJob(res.body.job_id, (j) => j.job_state === 'cancelled');
        assert.ok(job.stopped_at);
      } finally {
        await idle.close();
      }
    });

    it('answers 409 conflict with state stopped for a finished job', async () => {
      const { job_id } = await startImport({ project_name: 'Quick', add_media: { 'a.wav': { url: media.url('file', 'a.wav') } } });
      await h.waitForJob(job_id);
      const res = await h.http.delete(`/v1/jobs/${job_id}`).set(h.auth());
      assert.equal(res.status, 409);
      assert.equal(res.body.state, 'stopped');
    });

    it('answers 404 for unknown or malformed job ids and 403 for another drive', async () => {
      assert.equal((await h.http.delete('/v1/jobs/project-media-import-8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10').set(h.auth())).status, 404);
      assert.equal((await h.http.delete('/v1/jobs/nonsense').set(h.auth())).status, 404);
      assert.equal((await h.http.get('/v1/jobs/nonsense').set(h.auth())).status, 404);
      const { job_id } = await startImport({ project_name: 'Mine', add_media: { 'a.wav': { url: media.url('file', 'a.wav') } } });
      const other = h.auth(h.other.token);
      const get = await h.http.get(`/v1/jobs/${job_id}`).set(other);
      assert.equal(get.status, 403);
      assert.equal(get.body.error, 'forbidden');
      assert.equal((await h.http.delete(`/v1/jobs/${job_id}`).set(other)).status, 403);
    });
  });

  describe('GET /v1/jobs', () => {
    it("lists the drive's jobs newest first, filtered by project and type, paged with a cursor", async () => {
      const first = await startImport({ project_name: 'Listed', add_media: { 'a.wav': { url: media.url('file', 'a.wav') } } });
      const ids = [first.job_id];
      for (let i = 0; i < 4; i++) {
        const next = await startImport({ project_id: first.project_id, add_media: { [`a${i}.wav`]: { url: media.url('file', 'a.wav') } } });
        ids.push(next.job_id);
      }
      await startImport({ project_name: 'Other project', add_media: { 'a.wav': { url: media.url('file', 'a.wav') } } });
      await waitFor(async () => {
        const all = await h.http.get('/v1/jobs').query({ project_id: first.project_id, limit: 100 }).set(h.auth());
        return all.body.data?.length === 5;
      });

      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const res = await h.http
          .get('/v1/jobs')
          .query({ project_id: first.project_id, limit: 2, ...(cursor ? { cursor } : {}) })
          .set(h.auth());
        assert.equal(res.status, 200);
        assert.ok(h.schemas.validator('jobs-list')(res.body), JSON.stringify(h.schemas.validator('jobs-list').errors));
        seen.push(...res.body.data.map((j: { job_id: string }) => j.job_id));
        cursor = res.body.pagination.next_cursor;
        pages++;
      } while (cursor);
      assert.equal(pages, 3);
      assert.deepEqual(seen, [...ids].reverse(), 'newest first, every job once');

      const byType = await h.http.get('/v1/jobs').query({ type: 'agent' }).set(h.auth());
      assert.deepEqual(byType.body.data, []);
      const otherDrive = await h.http.get('/v1/jobs').set(h.auth(h.other.token));
      assert.deepEqual(otherDrive.body.data, [], 'another drive sees none of them');
      const future = await h.http.get('/v1/jobs').query({ created_after: '2999-01-01T00:00:00Z' }).set(h.auth());
      assert.deepEqual(future.body.data, []);
    });

    it('rejects bad query parameters with 400 naming them', async () => {
      for (const [q, field] of [
        [{ limit: 0 }, 'limit'],
        [{ limit: 101 }, 'limit'],
        [{ type: 'render' }, 'type'],
        [{ project_id: 'x' }, 'project_id'],
        [{ created_after: 'yesterday' }, 'created_after'],
        [{ cursor: 'garbage' }, 'cursor'],
        [{ colour: 'red' }, 'colour'],
      ] as const) {
        const res = await h.http.get('/v1/jobs').query(q).set(h.auth());
        assert.equal(res.status, 400, JSON.stringify(q));
        assert.match(res.body.message, new RegExp(field));
      }
    });
  });

  describe('importing into an existing project', () => {
    it('fails only the file when a concurrent import took the same reference first', async () => {
      const { job_id, project_id } = await startImport({
        project_name: 'Race',
        add_media: { 'seed.wav': { url: media.url('file', 'a.wav') } },
      });
      await h.waitForJob(job_id);
      const body = { project_id, add_media: { 'same.wav': { url: media.url('file', 'a.wav') } } };
      const [a, b] = await Promise.all([startImport(body), startImport(body)]);
      const [ja, jb] = [await h.waitForJob(a.job_id), await h.waitForJob(b.job_id)];
      const statuses = [ja, jb].map((j) => (j.result as any).media_status['same.wav']);
      assert.deepEqual(statuses.map((s) => s.status).sort(), ['failed', 'success']);
      assert.match(statuses.find((s) => s.status === 'failed').error_message, /already exists/);
      assert.deepEqual([ja, jb].map((j) => (j.result as any).status).sort(), ['error', 'success']);
    });

    it('adds media, refuses a reference that exists (400) and a project of another drive (403)', async () => {
      const { job_id, project_id } = await startImport({
        project_name: 'Growing',
        add_media: { 'a.wav': { url: media.url('file', 'a.wav') } },
      });
      await h.waitForJob(job_id);
      const dup = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send({ project_id, add_media: { 'a.wav': { url: media.url('file', 'a.wav') } } });
      assert.equal(dup.status, 400);
      assert.match(dup.body.message, /add_media\["a\.wav"\].*already exists/);
      const foreign = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth(h.other.token))
        .send({ project_id, add_media: { 'b.wav': { url: media.url('file', 'a.wav') } } });
      assert.equal(foreign.status, 403);

      const more = await startImport({
        project_id,
        add_media: { 'b.wav': { url: media.url('file', 'a.wav') }, seq: { tracks: [{ media: 'a.wav' }, { media: 'b.wav', offset: 0.5 }] } },
        add_compositions: [{ name: 'Both', clips: [{ media: 'a.wav' }, { media: 'seq' }] }],
      });
      assert.equal(more.project_id, project_id);
      const job = await h.waitForJob(more.job_id);
      const result = job.result as Record<string, any>;
      assert.equal(result.status, 'success', JSON.stringify(result));
      assert.ok(Math.abs(result.media_status.seq.duration_seconds - 1.5) < 0.05);
      assert.equal(result.created_compositions[0].name, 'Both');
      assert.ok(Math.abs(result.media_seconds_used - 1) < 0.1, 'a sequence reuses its tracks and costs nothing more');
    });
  });
});

describe('replay (embedded adapters)', function () {
  this.timeout(30_000);
  it('rebuilds the jobs read model from the store to the same documents', async () => {
    const h = await startHarness();
    try {
      const body = { project_name: 'R', add_media: { 'x.wav': { url: 'http://127.0.0.1:9/x.wav' } } };
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send(body)).body.job_id);
      for (const id of ids) await h.waitForJob(id);
      const before = await h.read.find('jobs', { drive_id: h.drive.drive_id }, { sort: [['_id', 1]] });
      assert.equal(before.length, 3);
      const result = await replayReadModels({ store: h.store, read: h.read });
      assert.ok(result.events > 10);
      const after = await h.read.find('jobs', { drive_id: h.drive.drive_id }, { sort: [['_id', 1]] });
      assert.deepEqual(after, before);
    } finally {
      await h.close();
    }
  });
});
