import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { ApiError, createClient, type Job } from '../../sdk/client';
import { BASE_URL, startHarness, type Harness } from '../fixtures/harness';
import { recordingProxy, type RecordingProxy } from '../fixtures/recording-proxy';

/**
 * A client made without a fetch of the caller's own (as the CLI makes it) sends the import's POST
 * and reads the job's event stream by node:http (sdk/node-http.ts): the answers, errors and
 * retries are those of the fetch path, which the other SDK tests drive through a custom fetch.
 */
describe('the SDK by node:http (no fetch of the caller’s own): the import POST and the job’s events', function () {
  this.timeout(60_000);
  let h: Harness;
  let proxy: RecordingProxy;

  before(async () => {
    h = await startHarness();
    await new Promise<void>((resolve) => h.server.listen(0, '127.0.0.1', resolve));
    proxy = await recordingProxy(`http://127.0.0.1:${(h.server.address() as AddressInfo).port}`);
  });
  after(async () => {
    await proxy.close();
    await h.close();
  });

  it('POSTs an import and answers its 201 body; a refused body or token throws the ApiError', async () => {
    const client = createClient({ baseUrl: `${proxy.url}/v1`, token: h.drive.token });
    const accepted = await client.importMedia({
      project_name: 'By node:http',
      add_media: { 'a.wav': { content_type: 'audio/wav', file_size: 10 } },
    });
    assert.equal(accepted.drive_id, h.drive.drive_id);
    assert.match(accepted.upload_urls!['a.wav'].upload_url, new RegExp(`^${new URL(BASE_URL).origin}/v1/uploads/`));
    await assert.rejects(
      client.importMedia({ project_name: 'Bad', add_media: { 'b.wav': { content_type: 'audio/wav', file_size: -1 } } }),
      (err: unknown) => err instanceof ApiError && err.status === 400 && err.error === 'invalid_input' && /file_size/.test(err.message),
    );
    const stranger = createClient({ baseUrl: `${proxy.url}/v1`, token: 'mps_nope' });
    await assert.rejects(
      stranger.importMedia({ project_name: 'No', add_media: {} }),
      (err: unknown) => err instanceof ApiError && err.status === 401 && err.error === 'unauthorized',
    );
  });

  it('follows the job’s event stream to its end without polling; a refused token throws', async () => {
    const client = createClient({ baseUrl: `${proxy.url}/v1`, token: h.drive.token });
    const accepted = await client.importMedia({
      project_name: 'Followed',
      add_media: { 'c.wav': { content_type: 'audio/wav', file_size: 10 } },
    });
    proxy.requests.length = 0;
    const updates: Job[] = [];
    const waiting = client.waitForJob(accepted.job_id, { onUpdate: (j) => updates.push(j) });
    await client.cancelJob(accepted.job_id);
    const job = await waiting;
    assert.equal(job.job_state, 'cancelled');
    assert.equal(updates.at(-1)?.job_state, 'cancelled');
    const reads = proxy.requests.filter((r) => r.method === 'GET').map((r) => [r.path, r.status]);
    assert.deepEqual(reads, [[`/v1/jobs/${accepted.job_id}/events`, 200]], 'one event stream, no polling');

    const stranger = createClient({ baseUrl: `${proxy.url}/v1`, token: 'mps_nope' });
    await assert.rejects(stranger.waitForJob(accepted.job_id), (err: unknown) => err instanceof ApiError && err.status === 401);
  });
});

describe('the SDK by node:http retries a 429 after its Retry-After', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ processors: false, rateLimitPerMinute: 2, rateLimitWindowSeconds: 1 });
    await new Promise<void>((resolve) => h.server.listen(0, '127.0.0.1', resolve));
  });
  after(async () => h.close());

  it('sends the POST again after Retry-After, and throws the 429 when told not to retry', async () => {
    const baseUrl = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}/v1`;
    const body = { project_name: 'Limited', add_media: { 'd.wav': { content_type: 'audio/wav', file_size: 10 } } };
    const once = createClient({ baseUrl, token: h.drive.token, maxAttempts: 1 });
    const results = await Promise.allSettled([once.importMedia(body), once.importMedia(body), once.importMedia(body)]);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    assert.ok(refused, 'one of three within the window is refused');
    assert.ok(refused.reason instanceof ApiError && refused.reason.status === 429, String(refused.reason));
    assert.ok(typeof refused.reason.retryAfter === 'number');
    const patient = createClient({ baseUrl, token: h.drive.token });
    const all = await Promise.all([patient.importMedia(body), patient.importMedia(body), patient.importMedia(body)]);
    assert.equal(new Set(all.map((a) => a.job_id)).size, 3, 'each POST was answered once it was let through');
  });
});
