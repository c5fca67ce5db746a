import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { startHarness, type Harness } from '../fixtures/harness';
import { waitFor } from '../fixtures/wait';
import { randomUUID } from 'node:crypto';
import { handleCommand } from '../../lib/app/command-handler';
import { jobDecider } from '../../lib/domain/job';
import { streams } from '../../lib/domain/ids';
import type { JobCommand } from '../../lib/domain/job';
import { laneOf } from '../../lib/adapters/embedded/event-log';

/**
 * Read-your-writes (DESIGN §8): after a 2xx of a command, the same client's next read reflects
 * it, and once a job reads `stopped` every read model it changed already shows the change.
 * Each scenario reads immediately after the write, many times: without the mechanism the read
 * models trail the store by a few milliseconds and these reads come back stale.
 */
describe('read-your-writes (HTTP, embedded adapters)', function () {
  this.timeout(120_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ryw-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 1) });
    // The read models trail the store by a few milliseconds, as under load or across processes.
    h = await startHarness({ projectionDelayMs: 3 });
  });
  after(async () => {
    await h?.close();
    await media?.close();
  });

  /** A job that stays queued: it waits for an upload nobody sends. */
  const waitingImport = (name: string) => ({
    project_name: name,
    add_media: { 'later.wav': { content_type: 'audio/wav', file_size: 1000 } },
  });

  it('a GET right after DELETE reads the job as cancelled, every time', async () => {
    const stale: string[] = [];
    for (let i = 0; i < 40; i++) {
      const created = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send(waitingImport(`Cancel ${i}`));
      assert.equal(created.status, 201, JSON.stringify(created.body));
      // Read once before, so a stale answer (queued) is kept on the read side if anything is.
      assert.equal((await h.http.get(`/v1/jobs/${created.body.job_id}`).set(h.auth())).body.job_state, 'queued');
      assert.equal((await h.http.delete(`/v1/jobs/${created.body.job_id}`).set(h.auth())).status, 204);
      const read = await h.http.get(`/v1/jobs/${created.body.job_id}`).set(h.auth());
      if (read.body.job_state !== 'cancelled') stale.push(`${i}: ${read.body.job_state}`);
    }
    assert.deepEqual(stale, []);
  });

  it('a project created by a 201 is in GET /v1/projects and the job in GET /v1/jobs at once, every time', async () => {
    const missing: string[] = [];
    for (let i = 0; i < 40; i++) {
      const name = `Listed ${i} ${Date.now()}`;
      const created = await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send(waitingImport(name));
      assert.equal(created.status, 201);
      const projects = await h.http.get('/v1/projects').query({ name }).set(h.auth());
      if (!projects.body.data.some((p: { id: string }) => p.id === created.body.project_id)) missing.push(`project ${i}`);
      const jobs = await h.http.get('/v1/jobs').query({ project_id: created.body.project_id }).set(h.auth());
      if (!jobs.body.data.some((j: { job_id: string }) => j.job_id === created.body.job_id)) missing.push(`job ${i}`);
    }
    assert.deepEqual(missing, []);
  });

  it('once a job reads stopped, the project, its compositions and search already show what it imported', async () => {
    const gaps: string[] = [];
    for (let i = 0; i < 8; i++) {
      const name = `Effects ${i}`;
      const created = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send({
          project_name: name,
          add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } },
          add_compositions: [{ name: `Cut ${i}`, clips: [{ media: 'voice.wav' }] }],
        });
      assert.equal(created.status, 201);
      // Polled as a client does; each poll is followed at once by the reads a client makes next.
      await waitFor(
        async () => {
          const job = await h.http.get(`/v1/jobs/${created.body.job_id}`).set(h.auth());
          if (job.body.job_state !== 'stopped') return null;
          const project = await h.http.get(`/v1/projects/${created.body.project_id}`).set(h.auth());
          if (project.body.media_files?.['voice.wav']?.type !== 'audio') gaps.push(`${i}: media missing`);
          if (!project.body.compositions?.some((c: { name: string; duration: number }) => c.name === `Cut ${i}` && c.duration > 0.5)) {
            gaps.push(`${i}: composition missing or empty: ${JSON.stringify(project.body.compositions)}`);
          }
          const found = await h.http
            .get('/v1/search')
            .query({ query: `Cut ${i}`, type: 'composition' })
            .set(h.auth());
          if (!found.body.results?.some((r: { project_id: string }) => r.project_id === created.body.project_id)) gaps.push(`${i}: search`);
          return true;
        },
        { timeoutMs: 30_000, intervalMs: 1, what: `job ${i} stopped` },
      );
    }
    assert.deepEqual(gaps, []);
  });

  it('the project page right after DELETE shows the job cancelled, every time', async () => {
    const stale: number[] = [];
    for (let i = 0; i < 20; i++) {
      const created = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send(waitingImport(`Paged ${i}`));
      assert.equal((await h.http.get(`/${created.body.project_id}`).set(h.auth())).status, 200);
      assert.equal((await h.http.delete(`/v1/jobs/${created.body.job_id}`).set(h.auth())).status, 204);
      const page = await h.http.get(`/${created.body.project_id}`).set(h.auth());
      if (!page.text.includes('cancelled')) stale.push(i);
    }
    assert.deepEqual(stale, []);
  });

  it('another token of the drive does not wait for writes it did not make', async () => {
    const other = await h.newToken();
    const created = await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send(waitingImport('Not mine'));
    assert.equal(created.status, 201);
    // Whatever it reads, it reads at once (a just-accepted job is folded from its stream).
    const read = await h.http.get(`/v1/jobs/${created.body.job_id}`).set(h.auth(other.token));
    assert.equal(read.status, 200);
  });
});

describe('a final job state waits for everything appended before it (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  const name = `Slow effect ${Date.now()}`;

  before(async () => {
    // One project's creation takes 300 ms to project; everything else is projected at once.
    h = await startHarness({
      processors: false,
      projectionDelayMs: (e) => (e.type === 'ProjectCreated' && e.data.name === name ? 300 : 0),
    });
  });
  after(async () => h?.close());

  it('a job read as stopped by anyone comes with the effects appended before its stop, even from another partition', async () => {
    const job = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'Fast', add_media: { 'a.wav': { content_type: 'audio/wav', file_size: 10 } } });
    assert.equal(job.status, 201);
    await h.waitForJob(job.body.job_id, (j) => j.job_state === 'queued');
    // An effect on another partition, appended before the job stops: a project of its own.
    const effect = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: name, add_media: { 'b.wav': { content_type: 'audio/wav', file_size: 10 } } });
    // The stop on a partition key whose lane is not the project's, so nothing orders the two.
    let key = job.body.job_id;
    for (let i = 0; laneOf(key, 4) === laneOf(effect.body.project_id, 4); i++) key = `${job.body.job_id}#${i}`;
    await stopByHand(h, job.body.job_id, key);

    // Another token: no write of its own to wait for, only the job's final state.
    const reader = await h.newToken();
    const stopped = await h.waitForJob(job.body.job_id, undefined, 10_000, reader.token);
    assert.equal(stopped.job_state, 'stopped');
    const listed = await h.http.get('/v1/projects').query({ name }).set(h.auth(reader.token));
    assert.deepEqual(
      listed.body.data.map((p: { id: string }) => p.id),
      [effect.body.project_id],
      'the project appended before the stop is listed',
    );
  });
});

/** Stops a queued job as a worker would: claims it and records a result. */
async function stopByHand(h: Harness, jobId: string, partitionKey: string) {
  const run = (command: JobCommand) =>
    handleCommand(h.store, streams.job(jobId), jobDecider, command, {
      newId: () => randomUUID(),
      metadata: { partition_key: partitionKey },
    });
  const now = () => new Date().toISOString();
  await run({ type: 'ClaimJob', workerId: 'by-hand', leaseMs: 60_000, now: now() });
  const result = { status: 'error', error_code: 'internal_error', error_message: 'stopped by the test' } as const;
  await run({ type: 'StopJob', attempt: 1, result, projectUrl: null, now: now() });
}
