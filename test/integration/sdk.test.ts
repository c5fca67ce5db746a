import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError, createClient, type Client, type Job } from '../../sdk/client';
import { BASE_URL, startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { createDrive } from '../../lib/app/admin';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';

const urlOf = (input: string | URL | Request) => (input instanceof Request ? input.url : String(input));

/** The harness's URLs (BASE_URL, and upload URLs under it) sent to where it listens. */
function loopbackFetch(base: string, seen: { method: string; url: string; status: number }[] = []): typeof fetch {
  const origin = new URL(BASE_URL).origin;
  return async (input, init) => {
    const request = new Request(input, init);
    const url = request.url.replace(origin, base);
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer();
    const response = await fetch(url, { method: request.method, headers: request.headers, body, signal: request.signal });
    seen.push({ method: request.method, url: new URL(url).pathname, status: response.status });
    return response;
  };
}

async function listen(h: Harness): Promise<string> {
  await new Promise<void>((resolve) => h.server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(h.server.address() as AddressInfo).port}`;
}

describe('the SDK (sdk/client.ts) against the service over loopback HTTP', function () {
  this.timeout(60_000);
  let h: Harness;
  let base: string;
  let client: Client;
  let dir: string;
  let wav: string;

  before(async () => {
    h = await startHarness();
    base = await listen(h);
    client = createClient({ baseUrl: `${base}/v1`, token: h.drive.token, fetch: loopbackFetch(base) });
    dir = mkdtempSync(join(tmpdir(), 'mps-sdk-'));
    wav = await makeTestMedia(dir, 'wav', 3);
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await h.close();
  });

  it('answers typed bodies: status, agent models, lists', async () => {
    const status = await client.status();
    assert.equal(status.drive_id, h.drive.drive_id);
    assert.equal(status.api_version, '1.2');
    const models = await client.agentModels();
    assert.ok(models.availableModels.some((m) => m.id === 'auto'));
    const jobs = await client.listJobs({ limit: 5 });
    assert.ok(Array.isArray(jobs.data));
  });

  it('throws ApiError with status, error, message, and state for a conflict', async () => {
    await assert.rejects(client.getJob('project-media-import-00000000-0000-4000-8000-000000000000'), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 404);
      assert.equal(err.error, 'not_found');
      assert.match(err.message, /does not exist/);
      assert.equal(err.state, undefined);
      return true;
    });
    await assert.rejects(
      client.listJobs({ limit: 1000 }),
      (err: unknown) => err instanceof ApiError && err.status === 400 && /limit/.test(err.message),
    );
    const accepted = await client.importMedia({
      project_name: 'Cancelled twice',
      add_media: { 'a.wav': { content_type: 'audio/wav', file_size: 10 } },
    });
    await client.cancelJob(accepted.job_id);
    await assert.rejects(client.cancelJob(accepted.job_id), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 409);
      assert.equal(err.error, 'conflict');
      assert.equal(err.state, 'cancelled');
      return true;
    });
    const key = `sdk-${Date.now()}`;
    const first = await client.importMedia(
      { project_name: 'Once', add_media: { 'o.wav': { content_type: 'audio/wav', file_size: 10 } } },
      { idempotencyKey: key },
    );
    const again = await client.importMedia(
      { project_name: 'Once', add_media: { 'o.wav': { content_type: 'audio/wav', file_size: 10 } } },
      { idempotencyKey: key },
    );
    assert.equal(again.job_id, first.job_id, 'the Idempotency-Key answers the first job again');
    await client.cancelJob(first.job_id);
    const unauthorised = createClient({ baseUrl: `${base}/v1`, token: 'nope', fetch: loopbackFetch(base) });
    await assert.rejects(
      unauthorised.status(),
      (err: unknown) => err instanceof ApiError && err.status === 401 && err.error === 'unauthorized',
    );
  });

  it('importAndWait: uploads a local file in parts and waits for the job', async () => {
    const updates: Job[] = [];
    const job = await client.importAndWait(
      { project_name: 'SDK import' },
      {
        files: { 'talk.wav': { path: wav, contentType: 'audio/wav' } },
        upload: { partSize: 64 * 1024 },
        intervalMs: 50,
        onUpdate: (j) => updates.push(j),
      },
    );
    assert.equal(job.job_state, 'stopped');
    assert.equal(job.result?.status, 'success');
    assert.equal(updates.at(-1)?.job_state, 'stopped');
    const project = await client.getProject(job.project_id);
    assert.deepEqual(Object.keys(project.media_files), ['talk.wav']);
  });

  it('uploadFile resumes an interrupted upload from what the server holds', async () => {
    const size = statSync(wav).size;
    const accepted = await client.importMedia({
      project_name: 'Resumed',
      add_media: { 'r.wav': { content_type: 'audio/wav', file_size: size } },
    });
    const url = (accepted as { upload_urls?: Record<string, { upload_url: string }> }).upload_urls!['r.wav'].upload_url;
    const stop = new AbortController();
    const firstRun: number[] = [];
    await assert.rejects(
      client.uploadFile(wav, url, {
        partSize: 32 * 1024,
        signal: stop.signal,
        onProgress: (sent) => {
          firstRun.push(sent);
          if (sent >= 64 * 1024) stop.abort();
        },
      }),
      (err: unknown) => (err as Error).name === 'AbortError',
    );
    const held = firstRun.at(-1)!;
    assert.ok(held >= 64 * 1024 && held < size, `held ${held} of ${size}`);
    const secondRun: number[] = [];
    const done = await client.uploadFile(wav, url, { partSize: 32 * 1024, onProgress: (sent) => secondRun.push(sent) });
    assert.equal(secondRun[0], held, 'the second run starts where the server stopped');
    assert.deepEqual(done, { asset_id: done.asset_id, size });
    const job = await client.waitForJob(accepted.job_id, { intervalMs: 50 });
    assert.equal(job.result?.status, 'success');
  });

  it('uploadFile streams the rest in one PUT by default (node:http), and a stream cut off mid-way resumes from what the server kept', async () => {
    const big = join(dir, 'big.wav');
    await new Promise<void>((resolve, reject) =>
      execFile(
        resolveFfmpegPaths().ffmpeg,
        [
          '-hide_banner',
          '-loglevel',
          'error',
          '-y',
          '-f',
          'lavfi',
          '-i',
          'sine=frequency=440:sample_rate=48000:duration=60',
          '-ac',
          '2',
          big,
        ],
        (err) => (err ? reject(err) : resolve()),
      ),
    );
    const size = statSync(big).size;
    // A proxy that cuts the first upload body after 3 MiB (the connection lost mid-file), then forwards.
    const CUT = 3 * 1024 * 1024;
    const bodies: number[] = [];
    let cutOnce = false;
    const proxy = createServer((req, res) => {
      const target = new URL(req.url ?? '/', base);
      const forwarded = httpRequest(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forwarded.on('error', () => res.destroy());
      let bytes = 0;
      const index = bodies.push(0) - 1;
      // The first PUT that carries bytes (`bytes a-b/total`, not the `bytes */total` question) is cut.
      const cutting = req.method === 'PUT' && /^bytes \d/.test(String(req.headers['content-range'])) && !cutOnce;
      if (cutting) cutOnce = true;
      req.on('data', (chunk: Buffer) => {
        if (cutting && bytes + chunk.length > CUT) {
          forwarded.write(chunk.subarray(0, CUT - bytes));
          bodies[index] = bytes = CUT;
          // Let the service take what it got, then lose the connection both ways.
          setTimeout(() => {
            forwarded.destroy();
            req.destroy();
          }, 200);
          req.pause();
          return;
        }
        bytes += chunk.length;
        bodies[index] = bytes;
        forwarded.write(chunk);
      });
      req.on('end', () => forwarded.end());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const accepted = await client.importMedia({
        project_name: 'Streamed',
        add_media: { 'big.wav': { content_type: 'audio/wav', file_size: size } },
      });
      const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const url = accepted.upload_urls!['big.wav'].upload_url.replace(new URL(BASE_URL).origin, proxied);
      const done = await client.uploadFile(big, url, { transport: 'http' });
      assert.deepEqual(done, { asset_id: done.asset_id, size });
      const sent = bodies.filter((b) => b > 0);
      assert.equal(sent[0], CUT, 'the first body was cut after 3 MiB');
      assert.equal(sent.length, 2, `one streamed PUT, then one for the rest: ${JSON.stringify(bodies)}`);
      assert.ok(sent[1] < size && sent[0] + sent[1] >= size, `the second PUT sent only what the server lacked: ${sent[1]} of ${size}`);
      const job = await client.waitForJob(accepted.job_id, { intervalMs: 50 });
      assert.equal(job.result?.status, 'success', JSON.stringify(job.result));
    } finally {
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it('editAndWait and publishAndWait: an agent turn and a publish, each waited for', async () => {
    // A drive with AI credits for the turn.
    const drive = await createDrive(h.admin, { name: 'Agent drive', credits: 1000 });
    const client = createClient({ baseUrl: `${base}/v1`, token: drive.token, fetch: loopbackFetch(base) });
    const imported = await client.importAndWait(
      { project_name: 'Edit and publish', add_compositions: [{ name: 'Cut', clips: [{ media: 'a.wav' }] }] },
      { files: { 'a.wav': { path: wav, contentType: 'audio/wav' } }, intervalMs: 50 },
    );
    const edited = await client.editAndWait({ project_id: imported.project_id, prompt: 'add a marker at 1 second' }, { intervalMs: 50 });
    assert.equal(edited.job_type, 'agent');
    assert.equal(edited.job_state, 'stopped');
    const published = await client.publishAndWait({ project_id: imported.project_id, media_type: 'Audio' }, { intervalMs: 50 });
    assert.equal(published.job_type, 'publish');
    assert.equal(published.result?.status, 'success', JSON.stringify(published.result));
    assert.ok(published.result?.download_url);
  });

  it('waitForJob reads the event stream when the server answers with one, and polls nothing then', async () => {
    const seen: { method: string; url: string; status: number }[] = [];
    const plain = loopbackFetch(base, seen);
    // The stream as GET /jobs/{id}/events sends it: the job document per change, then the final one, then the end.
    const streaming: typeof fetch = async (input, init) => {
      const events = /\/v1\/jobs\/([^/]+)\/events$/.exec(new URL(urlOf(input)).pathname);
      if (!events) return plain(input, init);
      const jobId = decodeURIComponent(events[1]);
      const encoder = new TextEncoder();
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let id = 1; ; id += 1) {
            const job = (await h.http.get(`/v1/jobs/${jobId}`).set(h.auth())).body as Job;
            controller.enqueue(encoder.encode(`id: ${id}\nevent: job\ndata: ${JSON.stringify(job)}\n\n`));
            if (job.job_state === 'stopped' || job.job_state === 'cancelled') break;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          controller.close();
        },
      });
      return new Response(stream, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
    };
    const sse = createClient({ baseUrl: `${base}/v1`, token: h.drive.token, fetch: streaming });
    const accepted = await sse.importMedia({
      project_name: 'Streamed',
      add_media: { 's.wav': { content_type: 'audio/wav', file_size: statSync(wav).size } },
    });
    const url = (accepted as { upload_urls?: Record<string, { upload_url: string }> }).upload_urls!['s.wav'].upload_url;
    await sse.uploadFile(wav, url);
    const updates: Job[] = [];
    const job = await sse.waitForJob(accepted.job_id, { onUpdate: (j) => updates.push(j) });
    assert.equal(job.job_state, 'stopped');
    assert.ok(updates.length >= 1);
    assert.equal(seen.filter((r) => r.method === 'GET' && r.url === `/v1/jobs/${accepted.job_id}`).length, 0, 'no polling');
  });

  it('waitForJob polls when the event stream is not there (404) or the connection fails', async () => {
    const refused: typeof fetch = async (input, init) => {
      if (urlOf(input).endsWith('/events')) throw new TypeError('fetch failed');
      return loopbackFetch(base)(input, init);
    };
    const polling = createClient({ baseUrl: `${base}/v1`, token: h.drive.token, fetch: refused });
    const accepted = await polling.importMedia({
      project_name: 'Polled',
      add_media: { 'p.wav': { content_type: 'audio/wav', file_size: 10 } },
    });
    await polling.cancelJob(accepted.job_id);
    const job = await polling.waitForJob(accepted.job_id, { intervalMs: 50 });
    assert.equal(job.job_state, 'cancelled');
  });
});

describe('the SDK retries a 429 after its Retry-After', function () {
  this.timeout(30_000);
  let h: Harness;
  let base: string;
  before(async () => {
    h = await startHarness({ processors: false, rateLimitPerMinute: 2, rateLimitWindowSeconds: 1 });
    base = await listen(h);
  });
  after(async () => h.close());

  it('sends the request again after Retry-After, a bounded number of times, and never a 400 again', async () => {
    const seen: { method: string; url: string; status: number }[] = [];
    const client = createClient({ baseUrl: `${base}/v1`, token: h.drive.token, fetch: loopbackFetch(base, seen) });
    for (let i = 0; i < 4; i += 1) assert.equal((await client.status()).drive_id, h.drive.drive_id);
    const statuses = seen.map((r) => r.status);
    assert.ok(statuses.includes(429), `a 429 was met: ${statuses}`);
    assert.equal(statuses.filter((s) => s === 200).length, 4);

    seen.length = 0;
    const once = createClient({ baseUrl: `${base}/v1`, token: h.drive.token, fetch: loopbackFetch(base, seen), maxAttempts: 1 });
    const results = await Promise.allSettled([once.status(), once.status(), once.status()]);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    assert.ok(refused, 'one of three requests within the window is refused');
    assert.ok(refused.reason instanceof ApiError);
    assert.equal(refused.reason.status, 429);
    assert.equal(refused.reason.error, 'rate_limit_exceeded');
    assert.ok(typeof refused.reason.retryAfter === 'number' && refused.reason.retryAfter >= 0);

    await new Promise((resolve) => setTimeout(resolve, 1100));
    seen.length = 0;
    const bad = createClient({ baseUrl: `${base}/v1`, token: h.drive.token, fetch: loopbackFetch(base, seen) });
    await assert.rejects(bad.listJobs({ limit: 0 }), (err: unknown) => err instanceof ApiError && err.status === 400);
    assert.equal(seen.length, 1, 'a 400 is not sent again');
  });
});
