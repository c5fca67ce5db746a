import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { createMetrics } from '../../lib/observability/metrics';
import { startHarness, type Harness } from '../fixtures/harness';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';
import { startWebhookReceiver } from '../fixtures/webhook-receiver';

/**
 * Issue 19, finding 1: one tenant's dead receivers must not delay another tenant's webhooks.
 * Drive A has HANGING callbacks (1,000 by default; WEBHOOK_FAIRNESS_HANGING sets another count)
 * spread over four ports of 127.0.0.1, receivers that accept and never answer; attempts time out
 * after 15 s as in production. Then drive B's job, and one of drive A's to another host, stop:
 * each delivery must arrive within 1 s of its job stopping.
 */
const HANGING = Number(process.env.WEBHOOK_FAIRNESS_HANGING ?? 1000);
/** The dispatcher's default per host name of a drive (services/webhook-dispatcher/index.ts). */
const PER_HOST = 4;

describe('webhook delivery is fair across drives and hosts', function () {
  // Making the jobs takes most of it: about 30 s for 1,000 on a quiet machine.
  this.timeout(180_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let healthy: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let otherHost: Awaited<ReturnType<typeof startWebhookReceiver>>;
  const hanging: ReturnType<typeof hangingReceiver>[] = [];
  const tally = { open: 0, most: 0 };

  before(async () => {
    media = await startMediaServer({});
    h = await startHarness({
      allowlist: ['127.0.0.0/8'],
      concurrency: 8,
      webhooks: { allowlist: ['127.0.0.0/8'], timeoutMs: 15_000, scheduleSeconds: [5, 300] },
    });
    for (let i = 0; i < 4; i++) hanging.push(hangingReceiver(tally));
    await Promise.all(hanging.map((r) => r.listening));
    healthy = await startWebhookReceiver({ secret: h.other.webhook_secret });
    otherHost = await startWebhookReceiver({ secret: h.drive.webhook_secret, host: '127.0.0.2' });
  });
  after(async () => {
    await h?.close();
    await media?.close();
    await healthy?.close();
    await otherHost?.close();
    await Promise.all(hanging.map((r) => r.close()));
  });

  /** An import that stops at once (its one file is a 404) with a callback to `callbackUrl`. */
  async function stoppingImport(token: string, callbackUrl: string): Promise<string> {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(token))
      .send({ project_name: 'Hooked', add_media: { 'a.wav': { url: `${media.url('file', 'missing.wav')}` } }, callback_url: callbackUrl });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.job_id as string;
  }

  /** Milliseconds from the job stopping (its `stopped_at`) to the receiver having its delivery. */
  async function deliveredAfterStop(jobId: string, token: string, receiver: typeof healthy): Promise<number> {
    const job = await h.waitForJob(jobId, undefined, 20_000, token);
    const request = await waitFor(() => receiver.received.find((r) => JSON.parse(r.body.toString()).job_id === jobId), {
      what: `the delivery of ${jobId}`,
      timeoutMs: 20_000,
    });
    return request.at - Date.parse(String(job.stopped_at));
  }

  it(`delivers another drive's webhook within 1 s while one drive has ${HANGING} hanging callbacks`, async () => {
    for (let i = 0; i < HANGING; i += 25) {
      const batch = Array.from({ length: Math.min(25, HANGING - i) }, (_, j) => hanging[(i + j) % hanging.length].url);
      await Promise.all(batch.map((url) => stoppingImport(h.drive.token, url)));
    }
    await waitFor(async () => (await h.read.find('deliveries', { drive_id: h.drive.drive_id })).length >= HANGING, {
      what: `${HANGING} deliveries scheduled`,
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    await waitFor(() => tally.open >= PER_HOST, { what: 'the hanging attempts under way' });
    const metrics = createMetrics();
    metrics.watchWebhooks(h.dispatcher!.slots);
    const atCap = new RegExp(`webhook_attempts_in_flight\\{what="most_per_drive"\\} ${PER_HOST}\n`);
    await waitFor(async () => atCap.test(await metrics.registry.metrics()), { what: 'drive A at its cap, in metrics' });

    const late = await deliveredAfterStop(await stoppingImport(h.other.token, healthy.url('/b')), h.other.token, healthy);
    assert.ok(late < 1000, `drive B's webhook arrived ${late} ms after its job stopped`);
    // Within drive A, its other receiving host is not held up by its hanging one either.
    const lateA = await deliveredAfterStop(await stoppingImport(h.drive.token, otherHost.url('/a')), h.drive.token, otherHost);
    assert.ok(lateA < 1000, `drive A's webhook to another host arrived ${lateA} ms after its job stopped`);

    // Four ports of one host name are one host: the cap holds across them (host:port would allow 16).
    assert.ok(tally.most <= PER_HOST, `at most ${PER_HOST} hanging attempts at once across the four ports, saw ${tally.most}`);
  });
});

/** A receiver that accepts connections and never answers; `tally` counts the open ones of all, and the most at once. */
function hangingReceiver(tally: { open: number; most: number }) {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    tally.open += 1;
    tally.most = Math.max(tally.most, tally.open);
    socket.on('close', () => {
      sockets.delete(socket);
      tally.open -= 1;
    });
    socket.on('error', () => undefined);
    socket.resume();
  });
  const listening = new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    listening,
    get url() {
      const address = server.address();
      return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
