import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createOutboundFetcher } from '../../lib/adapters/http/outbound-fetcher';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { updateDrive } from '../../lib/app/admin';
import * as webhooks from '../../services/webhook-dispatcher';
import { generateWebhookSecret } from '../../lib/app/tokens';
import { startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';
import { startWebhookReceiver } from '../fixtures/webhook-receiver';

/** The webhook dispatcher against receivers on loopback (issue: webhooks, rules 1–7). */
describe('webhook delivery (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhooks-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 1) });
    h = await startHarness({ webhooks: { scheduleSeconds: [0.3, 0.3, 0.3], timeoutMs: 1000, perHost: 2 } });
    receiver = await startWebhookReceiver({ secret: h.drive.webhook_secret });
  });
  after(async () => {
    await h?.close();
    await media?.close();
    await receiver?.close();
  });

  /** An import whose callback goes to `path` of the receiver; resolves when the job has stopped. */
  async function importWithCallback(path: string, token = h.drive.token) {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(token))
      .send({
        project_name: `Hook ${path}`,
        add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } },
        callback_url: receiver.url(path),
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await h.waitForJob(res.body.job_id, undefined, 20_000, token);
    return res.body.job_id as string;
  }
  const to = (path: string) => receiver.received.filter((r) => r.path === path);
  const deliveries = async (jobId: string) => (await h.http.get(`/v1/jobs/${jobId}/deliveries`).set(h.auth())).body;

  it('POSTs the job document byte for byte as GET /jobs/{id} answers it, signed with the drive’s secret', async () => {
    receiver.script([200]);
    const jobId = await importWithCallback('/signed');
    await waitFor(async () => (to('/signed').length === 1 ? true : null), { what: 'the delivery' });
    const [request] = to('/signed');
    assert.equal(request.method, 'POST');
    assert.equal(request.headers['content-type'], 'application/json');
    assert.ok(request.verified, 'verified by the standardwebhooks library with the drive secret');
    const asApi = await h.http.get(`/v1/jobs/${jobId}`).set(h.auth());
    assert.equal(request.body.toString(), asApi.text, 'byte for byte');
    new Webhook(h.drive.webhook_secret).verify(request.body.toString(), request.headers as Record<string, string>);
    await waitFor(async () => ((await deliveries(jobId)).state === 'delivered' ? true : null), { what: 'delivered recorded' });
    const listed = await deliveries(jobId);
    assert.equal(listed.webhook_id, request.headers['webhook-id']);
    assert.deepEqual(
      listed.attempts.map((a: { status: number; outcome: string }) => [a.status, a.outcome]),
      [[200, 'delivered']],
    );
  });

  it('retries failures on the schedule with the same webhook-id and delivers on the third attempt', async () => {
    receiver.script([500, 'close', 200]);
    const jobId = await importWithCallback('/flaky');
    await waitFor(async () => ((await deliveries(jobId)).state === 'delivered' ? true : null), {
      what: 'the third attempt',
      timeoutMs: 15_000,
    });
    const requests = to('/flaky');
    assert.equal(requests.length, 3);
    assert.equal(new Set(requests.map((r) => r.headers['webhook-id'])).size, 1, 'the id is stable across retries');
    assert.ok(requests.every((r) => r.verified));
    const gaps = requests.slice(1).map((r, i) => r.at - requests[i].at);
    assert.ok(
      gaps.every((ms) => ms >= 250),
      `retries wait for the schedule: ${gaps.join(', ')} ms`,
    );
    const listed = await deliveries(jobId);
    assert.deepEqual(
      listed.attempts.map((a: { outcome: string }) => a.outcome),
      ['retry', 'retry', 'delivered'],
    );
    assert.equal(listed.attempts[0].status, 500);
    assert.ok(listed.attempts[1].error, 'a dropped connection is an error, not a status');
  });

  it('resumes after a restart of the dispatcher between attempts, and never sends an acknowledged delivery again', async () => {
    receiver.script([500, 200]);
    const jobId = await importWithCallback('/restart');
    await waitFor(async () => (to('/restart').length >= 1 ? true : null), { what: 'the first attempt' });
    await h.restartDispatcher();
    await waitFor(async () => ((await deliveries(jobId)).state === 'delivered' ? true : null), { what: 'delivered after the restart' });
    await h.restartDispatcher();
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(to('/restart').length, 2, 'one failure, one acknowledged delivery, nothing after');
  });

  it('stops on a 410, and delivers again on request', async () => {
    receiver.script([410, 200]);
    const jobId = await importWithCallback('/gone');
    await waitFor(async () => ((await deliveries(jobId)).state === 'gone' ? true : null), { what: 'the 410' });
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(to('/gone').length, 1, 'no retry after 410');
    const again = await h.http.post(`/v1/jobs/${jobId}/deliveries`).set(h.auth()).set('X-Request-Id', 'redeliver-the-gone-one');
    assert.equal(again.status, 202, JSON.stringify(again.body));
    // The request is on record with the event it made, as every command's is.
    const requested = (await h.store.readStream(`delivery-${jobId}`)).filter((e) => e.type === 'DeliveryRequested');
    assert.deepEqual(
      requested.map((e) => e.metadata.correlation_id),
      ['redeliver-the-gone-one'],
    );
    await waitFor(async () => ((await deliveries(jobId)).state === 'delivered' ? true : null), { what: 'the redelivery' });
    assert.equal(to('/gone').length, 2);
  });

  it('lets a slow receiver delay no other', async () => {
    receiver.script(['slow', 200, 200]);
    const slow = await importWithCallback('/slow');
    await waitFor(async () => (to('/slow').length === 1 ? true : null), { what: 'the slow attempt under way' });
    const fast = await importWithCallback('/fast');
    await waitFor(async () => ((await deliveries(fast)).state === 'delivered' ? true : null), { what: 'the fast one', timeoutMs: 10_000 });
    const [slowAt, fastAt] = [to('/slow')[0].at, to('/fast')[0].at];
    assert.ok(fastAt - slowAt < 950, `delivered ${fastAt - slowAt} ms after the slow attempt began, while it still hung (1 s limit)`);
    const first = await waitFor(async () => ((await deliveries(slow)).attempts as { error?: string }[])[0] ?? null, {
      what: 'the slow attempt recorded',
    });
    assert.match(first.error ?? '', /timed out/);
  });

  it('shares the work between several dispatchers without sending any delivery twice', async () => {
    const second = await webhooks.start({
      store: h.store,
      read: h.read,
      log: h.log,
      logger: h.logger,
      clock: systemClock,
      ids: randomIds,
      fetcher: createOutboundFetcher({ allowlist: ['127.0.0.1'] }),
      workerId: 'second-dispatcher',
      secrets: h.secrets,
      // A second replica that only dispatches: the claims are what is tested.
      schedules: false,
      scheduleSeconds: [0.3],
      pollMs: 20,
      timeoutMs: 1000,
    });
    try {
      receiver.script([200]);
      const jobs = await Promise.all(Array.from({ length: 8 }, (_, i) => importWithCallback(`/shared-${i}`)));
      for (const jobId of jobs) {
        await waitFor(async () => ((await deliveries(jobId)).state === 'delivered' ? true : null), { what: `delivery of ${jobId}` });
      }
      await new Promise((r) => setTimeout(r, 500));
      for (let i = 0; i < 8; i++) assert.equal(to(`/shared-${i}`).length, 1, `/shared-${i} delivered exactly once`);
    } finally {
      await second.stop();
    }
  });

  it('signs with a rotated secret from the next delivery on', async () => {
    const secret = generateWebhookSecret();
    await updateDrive(h.admin, h.drive.drive_id, { webhook_secret: secret });
    receiver.script([200]);
    await importWithCallback('/rotated');
    await waitFor(async () => (to('/rotated').length === 1 ? true : null), { what: 'the delivery' });
    const [request] = to('/rotated');
    assert.equal(request.verified, false, 'the old secret no longer verifies');
    new Webhook(secret).verify(request.body.toString(), request.headers as Record<string, string>);
  });

  it('answers the deliveries endpoints only for the job’s own drive', async () => {
    const jobId = to('/signed').length
      ? ((await h.http.get('/v1/jobs?limit=100').set(h.auth())).body.data as { job_id: string }[])[0].job_id
      : '';
    assert.ok(jobId);
    assert.equal((await h.http.get(`/v1/jobs/${jobId}/deliveries`).set(h.auth(h.other.token))).status, 403);
    assert.equal((await h.http.post(`/v1/jobs/${jobId}/deliveries`).set(h.auth(h.other.token))).status, 403);
  });
});

describe('webhook delivery to an address the guard refuses', function () {
  this.timeout(30_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhooks-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 1) });
    // The request may name loopback (allow-listed for the API), the dispatcher's own guard refuses it.
    h = await startHarness({ webhooks: { scheduleSeconds: [], allowlist: [] } });
    receiver = await startWebhookReceiver({ secret: h.drive.webhook_secret });
  });
  after(async () => {
    await h?.close();
    await media?.close();
    await receiver?.close();
  });

  it('refuses private addresses at request time, and checks the address again at delivery', async () => {
    for (const url of ['http://10.0.0.7/hook', 'http://169.254.169.254/latest', 'http://[::1]/x', 'ftp://hooks.example/x']) {
      const res = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send({ project_name: 'x', add_media: { 'a.wav': { url: media.url('file', 'voice.wav') } }, callback_url: url });
      assert.equal(res.status, 400, `${url}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.message, /callback_url/);
    }
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth())
      .send({ project_name: 'x', add_media: { 'a.wav': { url: media.url('file', 'voice.wav') } }, callback_url: receiver.url('/private') });
    assert.equal(res.status, 201);
    await h.waitForJob(res.body.job_id);
    const listed = await waitFor(
      async () => {
        const d = (await h.http.get(`/v1/jobs/${res.body.job_id}/deliveries`).set(h.auth())).body;
        return d.state === 'failed' ? d : null;
      },
      { what: 'the refused delivery' },
    );
    assert.match(listed.attempts[0].error, /internal|refused/);
    assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
  });
});
