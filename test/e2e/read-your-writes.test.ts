import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, staleReadsAfterWrites, startService, type ServiceProcess } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

/**
 * Read-your-writes in the process `npm start` runs: the projector in the worker process, the
 * APIs in the parent reading the read store through their own snapshot. Reads come right after
 * each write while other clients keep the service busy.
 */
describe('e2e: read-your-writes in the all-in-one process', function () {
  this.timeout(180_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let svc: ServiceProcess;
  let token: string;
  let driveId: string;
  let busyToken: string;
  let env: Record<string, string>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-ryw-'));
    media = await startMediaServer({ 'talk.wav': await makeTestMedia(dir, 'wav', 1) });
    await buildOnce();
    env = {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-ryw-data-')),
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      RATE_LIMIT_PER_MINUTE: '1000000',
    };
    svc = await startService(env);
    ({ token, drive_id: driveId } = await admin(env, 'drive', 'create', '--name', 'RYW', '--media-seconds', '3600'));
    busyToken = (await admin(env, 'drive', 'create', '--name', 'Busy')).token;
  });
  after(async () => {
    svc?.killAll('SIGKILL');
    await media?.close();
  });

  /**
   * Another drive's client accepting imports while the test runs (each one really processed), at
   * most `total` of them, so the backlog it leaves is bounded.
   */
  function backgroundLoad(total = 160) {
    let stop = false;
    let sent = 0;
    const client = apiClient(svc, busyToken);
    const loops = Array.from({ length: 4 }, async () => {
      for (let i = 0; !stop && sent++ < total; i++) {
        await client.post('/jobs/import/project_media', {
          project_name: `Load ${i}`,
          add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
        });
      }
    });
    return async () => {
      stop = true;
      await Promise.all(loops);
    };
  }

  it('a job read as stopped comes with its project as the job left it, and /metrics has the projection lag per read model', async () => {
    const client = apiClient(svc, token);
    const gaps: string[] = [];
    let used = 0;
    for (let i = 0; i < 20; i++) {
      const created = await client.post('/jobs/import/project_media', {
        project_name: `Effects ${i}`,
        add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
        add_compositions: [{ name: 'Main', clips: [{ media: 'talk.wav' }] }],
      });
      const { job_id, project_id } = (await created.json()) as { job_id: string; project_id: string };
      let last: unknown = null;
      await waitFor(
        async () => {
          const job = (await (await client.get(`/jobs/${job_id}`)).json()) as {
            job_state: string;
            result?: { media_seconds_used: number };
          };
          last = job;
          if (job.job_state !== 'stopped') return null;
          used += job.result?.media_seconds_used ?? 0;
          const project = (await (await client.get(`/projects/${project_id}`)).json()) as Record<string, any>;
          if (project.media_files?.['talk.wav']?.type !== 'audio') gaps.push(`${i}: media missing`);
          if (!project.compositions?.some((c: { name: string; duration: number }) => c.name === 'Main' && c.duration > 0.5)) {
            gaps.push(`${i}: composition missing or empty`);
          }
          return true;
        },
        { timeoutMs: 30_000, intervalMs: 5, what: `job ${i} to stop` },
      ).catch((err: Error) => {
        const lines = svc
          .output()
          .split('\n')
          .filter((l) => l.includes(job_id));
        throw new Error(`${err.message}; last read ${JSON.stringify(last)}\n${lines.join('\n')}`);
      });
    }
    assert.deepEqual(gaps, []);
    // What operators see of the drive's balance: every second the jobs used, settled; nothing still reserved.
    const shown = (await admin(env, 'drive', 'show', '--drive', driveId)) as unknown as {
      balances: Record<string, Record<string, number>>;
    };
    assert.ok(Math.abs(shown.balances.media_seconds.used - used) < 1e-6, JSON.stringify(shown.balances));
    assert.equal(shown.balances.media_seconds.reserved, 0);
    assert.ok(Math.abs(shown.balances.media_seconds.left - (3600 - used)) < 1e-6);
    const metrics = await (await fetch(`${svc.base}/metrics`)).text();
    for (const model of ['jobs', 'projects', 'compositions', 'search']) {
      assert.match(metrics, new RegExp(`projection_lag_seconds_count\\{read_model="${model}"\\} [1-9]`), model);
    }
    assert.match(metrics, /^projector_batch_events_count [1-9]/m, 'the projector reports its batches');
  });

  it('DELETE then GET reads cancelled, and POST then GET /projects lists the project, under load, every time', async () => {
    const client = apiClient(svc, token);
    const stopLoad = backgroundLoad();
    let stale: string[];
    try {
      stale = await staleReadsAfterWrites(client, 100);
    } finally {
      await stopLoad();
    }
    assert.deepEqual(stale, []);
  });
});
