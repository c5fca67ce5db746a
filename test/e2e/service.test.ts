import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, inheritedEnv, ROOT, startService } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

/** The real process, as `npm start` runs it, on the embedded adapters. */
describe('e2e: the service process', function () {
  this.timeout(120_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let wavPath: string;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-media-'));
    const [wav, mp4, long] = await Promise.all([makeTestMedia(dir, 'wav', 2), makeTestMedia(dir, 'mp4', 2), makeTestMedia(dir, 'wav', 8)]);
    wavPath = wav;
    media = await startMediaServer({ 'talk.wav': wav, 'video.mp4': mp4, 'long.wav': long });
    await buildOnce();
  });
  after(async () => media?.close());

  const api = apiClient;

  it('imports media served on loopback: the admin CLI makes a drive while the server runs, the job reaches stopped', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'E2E drive', '--credits', '100');
      assert.match(drive.token, /^mps_/);
      assert.ok(drive.webhook_secret && drive.drive_id);
      const client = api(svc, drive.token);
      // Appended by another process: seen by the running server at once.
      const status = await client.get('/status');
      assert.equal(status.status, 200);
      assert.deepEqual(await status.json(), { drive_id: drive.drive_id, drive_name: 'E2E drive', api_version: '1.2' });

      const res = await client.post('/jobs/import/project_media', {
        project_name: 'E2E',
        folder_name: 'Clients/Acme',
        add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') }, 'video.mp4': { url: media.url('file', 'video.mp4') } },
        add_compositions: [{ name: 'Cut', clips: [{ media: 'video.mp4' }, { media: 'talk.wav' }] }],
      });
      assert.equal(res.status, 201);
      const { job_id } = (await res.json()) as { job_id: string };
      const job = await waitFor(
        async () => {
          const j = (await (await client.get(`/jobs/${job_id}`)).json()) as Record<string, any>;
          return j.job_state === 'stopped' ? j : null;
        },
        { timeoutMs: 30_000, intervalMs: 100, what: 'the import to stop' },
      );
      assert.equal(job.result.status, 'success', JSON.stringify(job.result));
      assert.ok(Math.abs(job.result.media_seconds_used - 4) < 0.3);
      assert.equal(job.result.created_compositions[0].name, 'Cut');
      const listed = (await (await client.get('/jobs?limit=5')).json()) as { data: { job_id: string }[] };
      assert.equal(listed.data[0].job_id, job_id);
      assert.match(svc.output(), /"msg":"import accepted"/, 'the log explains what happened');

      // The read path's caches, for operators sizing them: a poll of the unchanged job is a hit.
      await client.get(`/jobs/${job_id}`);
      await client.get(`/jobs/${job_id}`);
      const metrics = await (await fetch(`${svc.base}/metrics`)).text();
      const value = (series: string) =>
        Number(
          metrics
            .split('\n')
            .find((line) => line.startsWith(`${series} `))
            ?.split(' ')[1],
        );
      assert.ok(value('read_cache_lookups_total{cache="job_answers",result="hit"}') >= 1, metrics);
      assert.ok(value('read_cache_lookups_total{cache="job_answers",result="miss"}') >= 1, metrics);
      assert.ok(value('read_cache_entries{cache="job_answers"}') >= 1, metrics);
      assert.ok(value('read_cache_entries{cache="document_texts"}') >= 0, metrics);
      assert.equal(value('read_cache_entries{cache="project_files"}'), 0, `no project of 500 files: none kept\n${metrics}`);
      assert.ok(value('read_cache_lookups_total{cache="document_texts",result="miss"}') >= 1, metrics);
      // Each process's event loop delay, not their mean: serve and both workers it supervises.
      for (const process of ['serve', 'projector', 'jobs']) {
        assert.ok(value(`nodejs_eventloop_lag_p99_seconds{process="${process}"}`) >= 0, metrics);
      }
      // The event store's appends as the processes saw them: the accept's, and the worker's (merged in).
      assert.ok(value('event_store_append_seconds_count{outcome="ok"}') >= 5, metrics);
    } finally {
      svc.child.kill('SIGTERM');
      assert.equal(await svc.exited, 0, 'a graceful stop exits 0');
    }
  });

  it('takes a direct upload at its signed upload_url and imports it without a token', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')) };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Upload drive');
      const bytes = readFileSync(wavPath);
      const res = await api(svc, drive.token).post('/jobs/import/project_media', {
        project_name: 'Uploaded',
        add_media: { 'talk.wav': { content_type: 'audio/wav', file_size: bytes.length } },
      });
      assert.equal(res.status, 201);
      const body = (await res.json()) as { job_id: string; upload_urls: Record<string, { upload_url: string }> };
      const half = Math.floor(bytes.length / 2);
      const put = (range: string, part: Buffer) =>
        fetch(body.upload_urls['talk.wav'].upload_url, {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream', 'content-range': range },
          body: part,
        });
      assert.equal((await put(`bytes 0-${half - 1}/${bytes.length}`, bytes.subarray(0, half))).status, 308);
      assert.equal((await put(`bytes ${half}-${bytes.length - 1}/${bytes.length}`, bytes.subarray(half))).status, 200);
      const job = await waitFor(
        async () => {
          const j = (await (await api(svc, drive.token).get(`/jobs/${body.job_id}`)).json()) as Record<string, any>;
          return j.job_state === 'stopped' ? j : null;
        },
        { timeoutMs: 30_000, intervalMs: 100, what: 'the upload import to stop' },
      );
      assert.equal(job.result.status, 'success', JSON.stringify(job.result));
      assert.ok(Math.abs(job.result.media_status['talk.wav'].duration_seconds - 2) < 0.1);
    } finally {
      svc.child.kill('SIGTERM');
      assert.equal(await svc.exited, 0);
    }
  });

  it('replays every read model and the search index beside the live service, answering the same after', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Replay drive');
      const client = api(svc, drive.token);
      const res = await client.post('/jobs/import/project_media', {
        project_name: 'Replayed talk',
        folder_name: 'Archive',
        add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
      });
      const { job_id, project_id } = (await res.json()) as { job_id: string; project_id: string };
      const paths = ['/projects', `/projects/${project_id}`, `/jobs/${job_id}`, '/jobs', '/search?query=replayed', '/search?query=archive'];
      const answers = async () => Promise.all(paths.map(async (p) => (await client.get(p)).json()));
      // Stopped, projected, viewed once (a detail read records a view): then the answers hold still.
      let before = await answers();
      await waitFor(
        async () => {
          const now = await answers();
          // The view is recorded after its answer and projected a moment later: settled only once the list shows it.
          const viewed = (now[0] as { data?: { last_viewed_at?: string }[] }).data?.[0]?.last_viewed_at !== undefined;
          const settled =
            JSON.stringify(now) === JSON.stringify(before) && (now[2] as { job_state: string }).job_state === 'stopped' && viewed;
          before = now;
          return settled && (now[4] as { results: unknown[] }).results.length > 0 ? true : null;
        },
        { timeoutMs: 30_000, intervalMs: 300, what: 'the import stopped and projected' },
      );
      const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'dist', 'bin', 'replay.js')], {
        cwd: ROOT,
        env: { ...inheritedEnv(), ...env },
      });
      const report = JSON.parse(stdout) as { events: number; events_per_second: number };
      assert.ok(report.events > 5 && report.events_per_second > 0, stdout);
      assert.deepEqual(await answers(), before);
    } finally {
      svc.child.kill('SIGTERM');
      assert.equal(await svc.exited, 0);
    }
  });

  it('loses no accepted job across kill -9: every job that got a 201 reaches stopped exactly once', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    let svc = await startService(env);
    const drive = await admin(env, 'drive', 'create', '--name', 'Crash drive');
    const accepted: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await api(svc, drive.token).post('/jobs/import/project_media', {
        project_name: `Crash ${i}`,
        add_media: { 'long.wav': { url: media.url('slow', 'long.wav') } },
      });
      assert.equal(res.status, 201);
      accepted.push(((await res.json()) as { job_id: string }).job_id);
    }
    await waitFor(
      async () => {
        const states = await Promise.all(
          accepted.map(async (id) => ((await (await api(svc, drive.token).get(`/jobs/${id}`)).json()) as any).job_state),
        );
        return states.filter((s) => s === 'running').length >= 2;
      },
      { timeoutMs: 20_000, what: 'imports to be running' },
    );
    svc.killAll('SIGKILL');
    await svc.exited;

    svc = await startService(env);
    try {
      const client = api(svc, drive.token);
      for (const id of accepted) {
        await waitFor(async () => ((await (await client.get(`/jobs/${id}`)).json()) as any).job_state === 'stopped', {
          timeoutMs: 60_000,
          intervalMs: 200,
          what: `job ${id} to stop after the restart`,
        });
      }
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
    const store = createSqliteEventStore({ path: join(env.DATA_DIR, 'events.sqlite') });
    let restarted = 0;
    for (const id of accepted) {
      const events = await store.readStream(`job-${id}`);
      assert.equal(events.filter((e) => e.type === 'JobStopped').length, 1, `job ${id} stopped exactly once`);
      const stopped = events.find((e) => e.type === 'JobStopped')!;
      assert.equal((stopped.data.result as { status: string }).status, 'success');
      if (events.filter((e) => e.type === 'JobStarted').length > 1) restarted++;
    }
    await store.close();
    assert.ok(restarted >= 2, 'the jobs cut off by the kill were started again and finished');
  });

  it('resumes an import after a graceful stop (SIGTERM) without counting it as a failed attempt', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    let svc = await startService(env);
    const drive = await admin(env, 'drive', 'create', '--name', 'Deploy drive');
    const res = await api(svc, drive.token).post('/jobs/import/project_media', {
      project_name: 'Deploy',
      add_media: { 'long.wav': { url: media.url('slow', 'long.wav') } },
    });
    const { job_id } = (await res.json()) as { job_id: string };
    await waitFor(async () => ((await (await api(svc, drive.token).get(`/jobs/${job_id}`)).json()) as any).job_state === 'running', {
      timeoutMs: 20_000,
    });
    svc.child.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
    svc = await startService(env);
    try {
      const job = await waitFor(
        async () => {
          const j = (await (await api(svc, drive.token).get(`/jobs/${job_id}`)).json()) as any;
          return j.job_state === 'stopped' ? j : null;
        },
        { timeoutMs: 60_000, intervalMs: 200, what: 'the import to finish after the restart' },
      );
      assert.equal(job.result.status, 'success');
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
    const store = createSqliteEventStore({ path: join(env.DATA_DIR, 'events.sqlite') });
    const types = (await store.readStream(`job-${job_id}`))
      .map((e) => e.type)
      .filter((t) => !['JobProgressed', 'JobLeaseRenewed', 'MediaSecondsCharged'].includes(t));
    await store.close();
    assert.deepEqual(types, ['JobQueued', 'JobStarted', 'JobInterrupted', 'JobStarted', 'JobStopped']);
  });

  it('refuses to start on a malformed variable, naming it', async () => {
    await assert.rejects(
      startService({ DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), RATE_LIMIT_PER_MINUTE: 'lots' }),
      /RATE_LIMIT_PER_MINUTE/,
    );
  });
});
