import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, startService, type ServiceProcess } from '../fixtures/service-process';
import { openSse } from '../fixtures/sse';
import { waitFor } from '../fixtures/wait';

/**
 * Live job events under `npm start`: the projector runs in the worker process, the stream is
 * served by the parent, which learns of the projector's progress over IPC (its watermark). A
 * job's stop must reach an open stream across that boundary, promptly and with no poll of its own.
 */
describe('e2e: job events across processes (npm start)', function () {
  this.timeout(180_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let svc: ServiceProcess;
  let token: string;
  let env: Record<string, string>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-sse-'));
    media = await startMediaServer({ 'talk.wav': await makeTestMedia(dir, 'wav', 1) });
    await buildOnce();
    env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-sse-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '1000000' };
    svc = await startService(env);
    ({ token } = await admin(env, 'drive', 'create', '--name', 'SSE', '--media-seconds', '3600'));
  });
  after(async () => {
    svc?.killAll('SIGKILL');
    await media?.close();
  });

  const events = (jobId: string, headers: Record<string, string> = {}) =>
    openSse(`${svc.base}/v1/jobs/${jobId}/events`, { Authorization: `Bearer ${token}`, ...headers });

  /** `job_event_streams{what="open"}` as /metrics reports it. */
  const openStreams = async () => {
    const text = await (await fetch(`${svc.base}/metrics`)).text();
    const line = /^job_event_streams\{what="open"\} (\d+)$/m.exec(text);
    assert.ok(line, 'job_event_streams is exported');
    return Number(line[1]);
  };

  it("delivers an import's stop to the open stream, then closes it; the last event is what GET answers", async () => {
    const api = apiClient(svc, token);
    const created = await api.post('/jobs/import/project_media', {
      project_name: 'Streamed',
      add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
    });
    assert.equal(created.status, 201);
    const { job_id } = (await created.json()) as { job_id: string };
    const stream = await events(job_id);
    assert.equal(stream.status, 200);
    const all = await stream.rest();
    const last = JSON.parse(all[all.length - 1].data) as { job_state: string; stopped_at: string };
    assert.equal(last.job_state, 'stopped');
    // The clocks are the same machine's: a generous bound only (the bench measures the figure).
    const seenAt = performance.timeOrigin + all[all.length - 1].at;
    assert.ok(seenAt - Date.parse(last.stopped_at) < 5_000, `seen ${seenAt - Date.parse(last.stopped_at)} ms after its stop`);
    assert.deepEqual(last, await (await api.get(`/jobs/${job_id}`)).json());
  });

  it('delivers a cancel of a queued job (waiting for its upload) and closes', async () => {
    const api = apiClient(svc, token);
    const created = await api.post('/jobs/import/project_media', {
      project_name: 'Cancelled',
      add_media: { 'later.wav': { content_type: 'audio/wav', file_size: 1000 } },
    });
    const { job_id } = (await created.json()) as { job_id: string };
    const stream = await events(job_id);
    const first = await stream.nextEvent();
    assert.equal((JSON.parse(first!.data) as { job_state: string }).job_state, 'queued');
    assert.equal(await openStreams(), 1, 'the open stream is in /metrics');
    assert.equal((await api.delete(`/jobs/${job_id}`)).status, 204);
    const rest = await stream.rest();
    assert.equal(rest.length, 1);
    assert.equal((JSON.parse(rest[0].data) as { job_state: string }).job_state, 'cancelled');
    await waitFor(async () => (await openStreams()) === 0, { what: 'the closed stream to leave /metrics' });
  });

  it('ends open streams on SIGTERM, so the service stops rather than waiting for their jobs', async () => {
    const api = apiClient(svc, token);
    const created = await api.post('/jobs/import/project_media', {
      project_name: 'Held open',
      add_media: { 'later.wav': { content_type: 'audio/wav', file_size: 1000 } },
    });
    const { job_id } = (await created.json()) as { job_id: string };
    const stream = await events(job_id);
    assert.ok(await stream.nextEvent());
    svc.child.kill('SIGTERM');
    assert.equal(await stream.nextEvent(), null, 'the server ended the stream');
    const code = await Promise.race([
      svc.exited,
      new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 30_000).unref()),
    ]);
    assert.equal(code, 0);
  });
});
