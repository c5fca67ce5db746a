import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, startService, type ServiceProcess } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

/**
 * Issue 21 as users run it (`npm start`: the APIs in one process, the projector and the job worker
 * in theirs): import, "publish and wait", then download `result.download_url` (ranges, HEAD, a
 * tampered URL refused), open the share page, and read the published project's metadata by the
 * slug at the end of `share_url`, as a partner does; a republish keeps the share URL.
 */
describe('e2e: publish and wait, download, share page, metadata', function () {
  this.timeout(180_000);
  let svc: ServiceProcess | undefined;
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-publish-'));
    media = await startMediaServer({ 'clip.mp4': await makeTestMedia(dir, 'mp4', 2) });
    await buildOnce();
  });
  after(async () => {
    svc?.killAll('SIGTERM');
    await svc?.exited;
    await media?.close();
  });

  it('publishes, serves the render by signed URL and the page and metadata by slug', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-publish-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1', TRANSCRIBER: 'none' };
    svc = await startService(env);
    const drive = await admin(
      env,
      'drive',
      'create',
      '--name',
      'E2E publish',
      '--partner',
      '--first-name',
      'Ada',
      '--last-name',
      'Lovelace',
    );
    const api = apiClient(svc, drive.token);
    // The service names itself by localhost (BASE_URL and WEB_URL defaults); reach it where it listens.
    const here = (url: string) => url.replace(/^http:\/\/localhost:\d+/, svc!.base);
    const waitStopped = (jobId: string) =>
      waitFor(
        async () => {
          const body = (await (await api.get(`/jobs/${jobId}`)).json()) as { job_state: string; result?: Record<string, string> };
          return body.job_state === 'stopped' || body.job_state === 'cancelled' ? body : null;
        },
        { timeoutMs: 90_000, what: `job ${jobId} to stop` },
      );

    const imported = await api.post('/jobs/import/project_media', {
      project_name: 'Launch video',
      add_media: { 'clip.mp4': { url: media.url('file', 'clip.mp4') } },
      add_compositions: [{ name: 'Main', clips: [{ media: 'clip.mp4' }] }],
    });
    assert.equal(imported.status, 201);
    const { project_id: projectId, job_id: importId } = (await imported.json()) as { project_id: string; job_id: string };
    assert.equal((await waitStopped(importId)).result?.status, 'success');

    const accepted = await api.post('/jobs/publish', { project_id: projectId });
    assert.equal(accepted.status, 201);
    const { job_id: jobId } = (await accepted.json()) as { job_id: string };
    const job = await waitStopped(jobId);
    const result = job.result!;
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.equal(result.media_type, 'Video');

    // The render, by its signed URL: whole, a range, HEAD; a tampered URL is refused.
    const whole = await fetch(here(result.download_url));
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get('content-type'), 'video/mp4');
    assert.equal(whole.headers.get('accept-ranges'), 'bytes');
    const size = (await whole.arrayBuffer()).byteLength;
    assert.ok(size > 1000);
    const range = await fetch(here(result.download_url), { headers: { range: 'bytes=0-99' } });
    assert.equal(range.status, 206);
    assert.equal(range.headers.get('content-range'), `bytes 0-99/${size}`);
    assert.equal((await range.arrayBuffer()).byteLength, 100);
    const head = await fetch(here(result.download_url), { method: 'HEAD' });
    assert.equal(head.headers.get('content-length'), String(size));
    const signed = new URL(here(result.download_url));
    const signature = signed.searchParams.get('signature')!;
    signed.searchParams.set('signature', `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`);
    const tampered = await fetch(signed);
    assert.equal(tampered.status, 403);
    assert.equal(((await tampered.json()) as { error: string }).error, 'forbidden');

    // The share page, server-rendered with its player (unlisted by default: not indexed).
    const page = await fetch(here(result.share_url));
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /<video[^>]*>/);
    assert.match(html, /<meta property="og:title" content="Launch video"/);
    assert.match(html, /<meta name="robots" content="noindex/);

    // The metadata by the slug at the end of share_url (partner access), with its own signed URL.
    const slug = new URL(result.share_url).pathname.split('/').pop()!;
    const meta = await api.get(`/published_projects/${slug}`);
    assert.equal(meta.status, 200);
    const body = (await meta.json()) as {
      project_id: string;
      publish_type: string;
      privacy: string;
      metadata: {
        title: string;
        duration_seconds: number;
        duration_formatted: string;
        published_by: { first_name: string; last_name: string };
      };
      subtitles: string;
      download_url: string;
    };
    assert.equal(body.project_id, projectId);
    assert.equal(body.publish_type, 'video');
    assert.equal(body.privacy, 'unlisted');
    assert.equal(body.metadata.title, 'Launch video');
    assert.equal(body.metadata.duration_formatted, '00:00:02');
    assert.deepEqual(body.metadata.published_by, { first_name: 'Ada', last_name: 'Lovelace' });
    assert.ok(body.subtitles.startsWith('WEBVTT'));
    assert.equal((await fetch(here(body.download_url), { method: 'HEAD' })).status, 200);

    // Project detail lists the publish; a republish keeps the share URL.
    const detail = (await (await api.get(`/projects/${projectId}`)).json()) as { publishes: { share_url: string; media_type: string }[] };
    assert.deepEqual(
      detail.publishes.map((p) => [p.share_url, p.media_type]),
      [[result.share_url, 'Video']],
    );
    const again = await api.post('/jobs/publish', { project_id: projectId });
    const second = await waitStopped(((await again.json()) as { job_id: string }).job_id);
    assert.equal(second.result?.share_url, result.share_url);
  });
});
