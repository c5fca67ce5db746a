import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, freePort, inheritedEnv, ROOT, startService, type ServiceProcess } from '../fixtures/service-process';
import { hasEnded, waitFor } from '../fixtures/wait';

/** The all-in-one process under failure: job work dies, the process is killed mid-burst, the port is taken. */
/** What `dist/bin/serve.js` prints when it stops at start-up (its stderr), or "exited 0". */
function startupOutput(env: Record<string, string>): string {
  try {
    execFileSync(process.execPath, [join(__dirname, '..', '..', 'dist', 'bin', 'serve.js')], {
      env: { ...inheritedEnv(), ...env },
      encoding: 'utf8',
      stdio: 'pipe',
      timeout: 20_000,
    });
    return 'exited 0';
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
}

/** The partial renders (hidden `.part` files) anywhere under `dir`. */
function partialRenders(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((p) => /(^|\/)\.[^/]+\.part$/.test(p));
}

/** Whether a process whose command line names `text` runs. */
function running(text: string): boolean {
  try {
    return execFileSync('pgrep', ['-f', basename(text)], { encoding: 'utf8' }).trim() !== '';
  } catch {
    return false;
  }
}

describe('e2e: resilience of the all-in-one service', function () {
  this.timeout(180_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-media-'));
    media = await startMediaServer({ 'long.wav': await makeTestMedia(dir, 'wav', 30), 'clip.mp4': await makeTestMedia(dir, 'mp4', 30) });
    await buildOnce();
  });
  after(async () => media?.close());

  const client = apiClient;
  /** The pid of a worker `serve` supervises, by its part (bin/worker.ts): `jobs` or `projector`. */
  const workerPid = (svc: ServiceProcess, part: 'jobs' | 'projector' = 'jobs'): number | null => {
    try {
      const out = execFileSync('pgrep', ['-P', String(svc.child.pid), '-f', `worker\\.[jt]s ${part}`], { encoding: 'utf8' }).trim();
      return out ? Number(out.split('\n')[0]) : null;
    } catch {
      return null;
    }
  };

  it('a job whose work keeps killing its worker: the API answers throughout, the worker is restarted, the job ends with error', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    const svc = await startService(env);
    const drive = await admin(env, 'drive', 'create', '--name', 'Crash drive');
    const api = client(svc, drive.token);
    // Poll the API the whole time: every answer must be a 200.
    const statuses: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        statuses.push((await api.get('/status').catch(() => ({ status: 0 }))).status);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      const res = await api.post('/jobs/import/project_media', {
        project_name: 'Poison',
        add_media: { 'long.wav': { url: media.url('slow', 'long.wav') } },
      });
      assert.equal(res.status, 201);
      const { job_id } = (await res.json()) as { job_id: string };
      const store = createSqliteEventStore({ path: join(env.DATA_DIR, 'events.sqlite') });
      try {
        const attempts = async () => (await store.readStream(`job-${job_id}`)).filter((e) => e.type === 'JobStarted').length;
        // Three attempts, each cut off by the death of the worker running it.
        for (let attempt = 1; attempt <= 3; attempt++) {
          await waitFor(async () => (await attempts()) >= attempt, { timeoutMs: 30_000, what: `attempt ${attempt} to start` });
          const pid = await waitFor(() => workerPid(svc), { timeoutMs: 10_000, what: 'the worker process' });
          process.kill(pid, 'SIGKILL');
          await waitFor(() => (workerPid(svc) ?? pid) !== pid, { timeoutMs: 20_000, what: 'the worker to be restarted' });
        }
        const job = await waitFor(
          async () => {
            const j = (await (await api.get(`/jobs/${job_id}`)).json()) as any;
            return j.job_state === 'stopped' ? j : null;
          },
          { timeoutMs: 60_000, intervalMs: 200, what: 'the job to be given up' },
        );
        assert.equal(job.result.status, 'error');
        assert.equal(job.result.error_code, 'internal_error');
      } finally {
        await store.close();
      }
    } finally {
      polling = false;
      await poller;
      svc.killAll('SIGTERM');
      await svc.exited;
    }
    assert.ok(statuses.length > 20, `polled ${statuses.length} times`);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      'GET /v1/status answered 200 throughout',
    );
  });

  it('kill -9 during a burst of 500 POSTs: every job that got a 201 stops exactly once after a restart', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    let svc = await startService(env);
    const drive = await admin(env, 'drive', 'create', '--name', 'Burst drive');
    const accepted: string[] = [];
    let sent = 0;
    let killed = false;
    const body = (i: number) => ({ project_name: `Burst ${i}`, add_media: { 'gone.wav': { url: media.missing } } });
    await Promise.all(
      Array.from({ length: 25 }, async () => {
        while (sent < 500) {
          const i = sent++;
          const res = await client(svc, drive.token)
            .post('/jobs/import/project_media', body(i))
            .catch(() => null);
          if (res?.status === 201) accepted.push(((await res.json()) as { job_id: string }).job_id);
          else if (res && !killed) assert.fail(`POST ${i} answered ${res.status}`);
          if (!killed && accepted.length >= 200) {
            killed = true;
            svc.killAll('SIGKILL');
          }
        }
      }),
    );
    await svc.exited;
    assert.ok(accepted.length >= 200, `accepted ${accepted.length}`);

    svc = await startService(env);
    try {
      const api = client(svc, drive.token);
      for (const id of accepted) {
        await waitFor(async () => ((await (await api.get(`/jobs/${id}`)).json()) as any).job_state === 'stopped', {
          timeoutMs: 90_000,
          intervalMs: 100,
          what: `job ${id} to stop after the restart`,
        });
      }
    } finally {
      svc.killAll('SIGTERM');
      await svc.exited;
    }
    const store = createSqliteEventStore({ path: join(env.DATA_DIR, 'events.sqlite') });
    try {
      for (const id of accepted) {
        const stops = (await store.readStream(`job-${id}`)).filter((e) => e.type === 'JobStopped');
        assert.equal(stops.length, 1, `job ${id} stopped exactly once`);
      }
    } finally {
      await store.close();
    }
  });

  it('kill -9 of the projector three times mid-burst: once it is back, the job list, the project list and search hold every import', async () => {
    // 300 POSTs, then a search for each of their projects: more than a token's default minute.
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '5000' };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Projector crash drive');
      const api = client(svc, drive.token);

      // Each import names its project with one word of its own, which search then has to find.
      const nameOf = (i: number) => `crashburst${i}x`;
      const accepted = new Map<string, string>();
      let sent = 0;
      const posting = Promise.all(
        Array.from({ length: 20 }, async () => {
          while (sent < 300) {
            const i = sent++;
            const res = await api.post('/jobs/import/project_media', {
              project_name: nameOf(i),
              add_media: { 'gone.wav': { url: media.missing } },
            });
            assert.equal(res.status, 201, `POST ${i}`);
            accepted.set(((await res.json()) as { job_id: string }).job_id, nameOf(i));
          }
        }),
      );
      // Killed in the middle of catching up, each time once the supervisor has started a new one:
      // stopped (SIGSTOP) while 90 more imports are accepted, so that events pile up, let go, and
      // killed 10 ms later, with batches of them in flight and a checkpoint due.
      const killed: number[] = [];
      while (killed.length < 3) {
        const pid = await waitFor(
          () => {
            const p = workerPid(svc, 'projector');
            return p !== null && !killed.includes(p) ? p : null;
          },
          { timeoutMs: 20_000, what: 'a running projector' },
        );
        process.kill(pid, 'SIGSTOP');
        const from = accepted.size;
        await waitFor(() => accepted.size >= Math.min(300, from + 90), { timeoutMs: 30_000, what: 'more imports accepted' });
        process.kill(pid, 'SIGCONT');
        await new Promise((r) => setTimeout(r, 10));
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      }
      await posting;
      assert.equal(accepted.size, 300);

      // Read models only: the job list and the project list are pages of the read store, search its index.
      const listed = async <T>(path: string, key: 'data'): Promise<T[]> => {
        const all: T[] = [];
        let cursor: string | undefined;
        do {
          const page = (await (
            await api.get(`${path}${path.includes('?') ? '&' : '?'}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          ).json()) as {
            data: T[];
            pagination?: { next_cursor?: string | null };
          };
          all.push(...page[key]);
          cursor = page.pagination?.next_cursor ?? undefined;
        } while (cursor);
        return all;
      };
      await waitFor(
        async () => {
          const jobs = await listed<{ job_id: string; job_state: string }>('/jobs', 'data');
          const stopped = new Set(jobs.filter((j) => j.job_state === 'stopped').map((j) => j.job_id));
          return [...accepted.keys()].every((id) => stopped.has(id));
        },
        { timeoutMs: 90_000, intervalMs: 250, what: 'every accepted job listed as stopped' },
      );
      const projects = new Set((await listed<{ name: string }>('/projects', 'data')).map((p) => p.name));
      const unlisted = [...accepted.values()].filter((name) => !projects.has(name));
      assert.deepEqual(unlisted, [], 'every project in the project list');
      const unfound: string[] = [];
      for (const name of accepted.values()) {
        const res = await api.get(`/search?query=${name}&type=project`);
        assert.equal(res.status, 200, `search for ${name}: ${await res.clone().text()}`);
        const { results } = (await res.json()) as { results: { name: string }[] };
        if (!results.some((r) => r.name === name)) unfound.push(name);
      }
      assert.deepEqual(unfound, [], 'every project found by search');
    } finally {
      svc.killAll('SIGTERM');
      await svc.exited;
    }
  });

  it('kill -9 of the worker mid-render: the publish is rendered again by the restarted worker, and no partial render is left', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1', TRANSCRIBER: 'none' };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Render crash drive');
      const api = client(svc, drive.token);
      const stopped = (jobId: string) =>
        waitFor(
          async () => {
            const j = (await (await api.get(`/jobs/${jobId}`)).json()) as { job_state: string; result: Record<string, string> };
            return j.job_state === 'stopped' ? j : null;
          },
          { timeoutMs: 120_000, intervalMs: 200, what: `job ${jobId} to stop` },
        );
      const imported = await api.post('/jobs/import/project_media', {
        project_name: 'Crash render',
        add_media: { 'clip.mp4': { url: media.url('file', 'clip.mp4') } },
        add_compositions: [{ name: 'Main', clips: [{ media: 'clip.mp4' }] }],
      });
      const { project_id, job_id: importId } = (await imported.json()) as { project_id: string; job_id: string };
      assert.equal((await stopped(importId)).result.status, 'success');
      // 720p from a 160x120 source (asked for, so upscaled): a render of some seconds, long enough to be cut off.
      const accepted = await api.post('/jobs/publish', { project_id, resolution: '720p' });
      assert.equal(accepted.status, 201);
      const { job_id } = (await accepted.json()) as { job_id: string };

      const partial = await waitFor(() => partialRenders(env.DATA_DIR)[0] ?? null, {
        timeoutMs: 60_000,
        intervalMs: 20,
        what: 'the render to start writing',
      });
      const pid = workerPid(svc)!;
      process.kill(pid, 'SIGKILL');
      // Its ffmpeg dies with it (the parent-death signal), not a minute later when its render ends.
      await waitFor(() => !running(partial), { timeoutMs: 3_000, intervalMs: 50, what: 'the killed worker’s ffmpeg to die with it' });
      await waitFor(() => (workerPid(svc) ?? pid) !== pid, { timeoutMs: 20_000, what: 'the worker to be restarted' });

      const job = await stopped(job_id);
      assert.equal(job.result.status, 'success', JSON.stringify(job.result));
      const download = await fetch(job.result.download_url.replace(/^http:\/\/localhost:\d+/, svc.base));
      assert.equal(download.status, 200);
      assert.ok((await download.arrayBuffer()).byteLength > 1000);
      assert.deepEqual(partialRenders(env.DATA_DIR), [], `the cut-off render (${partial}) was removed`);
      const store = createSqliteEventStore({ path: join(env.DATA_DIR, 'events.sqlite') });
      try {
        const events = await store.readStream(`job-${job_id}`);
        assert.equal(events.filter((e) => e.type === 'JobStarted').length, 2, 'cut off once, rendered again once');
      } finally {
        await store.close();
      }
    } finally {
      svc.killAll('SIGTERM');
      await svc.exited;
    }
  });

  it('kill -9 of `serve` with imports running: its workers end within seconds, not after their appends and claims time out', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    const svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Orphaned');
      const api = client(svc, drive.token);
      // Trickled downloads (about 12 s each): the jobs are mid-work, reporting progress, when serve dies.
      for (let i = 0; i < 6; i++) {
        const res = await api.post('/jobs/import/project_media', {
          project_name: `Running ${i}`,
          add_media: { 'long.wav': { url: media.url('slow', 'long.wav') } },
        });
        assert.equal(res.status, 201);
      }
      await waitFor(() => /"progress"|job started/.test(svc.output()), { timeoutMs: 20_000, what: 'the jobs to start' });
      await new Promise((r) => setTimeout(r, 1000));
      const workers = execFileSync('pgrep', ['-P', String(svc.child.pid)], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map(Number);
      assert.equal(workers.length, 2, 'the projector and the jobs worker');
      const alive = () => workers.filter((pid) => !hasEnded(pid));
      svc.child.kill('SIGKILL');
      const killedAt = Date.now();
      // The event store's writer lived in serve: nothing either worker does can be committed any more.
      await waitFor(() => alive().length === 0, { timeoutMs: 30_000, intervalMs: 100, what: 'the workers to end' });
      const seconds = (Date.now() - killedAt) / 1000;
      assert.ok(seconds < 5, `the workers ended ${seconds.toFixed(1)} s after serve was killed`);
    } finally {
      svc.killAll('SIGKILL');
    }
  });

  it('a port already in use stops start-up with one line naming PORT, before any job work starts', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '0.0.0.0', () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const dataDir = mkdtempSync(join(tmpdir(), 'e2e-data-'));
      const out = startupOutput({ PORT: String(port), DATA_DIR: dataDir });
      assert.match(out, /PORT: \d+ is already in use/);
      assert.doesNotMatch(out, /worker ready|processors started|\n\s+at /);
    } finally {
      blocker.close();
    }
  });

  it('a second `npm start` on the same DATA_DIR stops at start-up, saying why, and the first one keeps working', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'e2e-data-'));
    const first = await startService({ DATA_DIR: dataDir, OUTBOUND_ALLOWLIST: '127.0.0.1' });
    try {
      const out = startupOutput({ PORT: String(await freePort()), DATA_DIR: dataDir });
      assert.match(out, /DATA_DIR: .*another process is the writer of this events file/);
      assert.doesNotMatch(out, /\n\s+at /, 'one line, no stack');
      const drive = await admin({ DATA_DIR: dataDir }, 'drive', 'create', '--name', 'Still');
      const res = await apiClient(first, drive.token).post('/jobs/import/project_media', { project_name: 'Still works', add_media: {} });
      assert.ok(res.status === 201 || res.status === 400, `the first service answers (${res.status})`);
    } finally {
      first.killAll('SIGKILL');
    }
  });

  it('stopping the `npm start` process stops the server it started (no orphan keeps the port)', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: { ...inheritedEnv(), PORT: String(port), DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), LOG_LEVEL: 'warn' },
      stdio: 'ignore',
    });
    const exited = new Promise<void>((resolve) => npm.on('exit', () => resolve()));
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok, {
        timeoutMs: 90_000,
        intervalMs: 200,
        what: 'npm start to answer',
      });
      npm.kill('SIGTERM');
      await exited;
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null)) === null, {
        timeoutMs: 20_000,
        intervalMs: 200,
        what: 'the server to stop with npm',
      });
    } finally {
      npm.kill('SIGKILL');
    }
  });
});
