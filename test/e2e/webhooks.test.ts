import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, startService } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';
import { startWebhookReceiver } from '../fixtures/webhook-receiver';

/** Webhooks through the all-in-one process: kill -9 between two attempts loses no delivery and sends none twice. */
describe('e2e: webhook delivery across kill -9', function () {
  this.timeout(120_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-media-'));
    media = await startMediaServer({ 'talk.wav': await makeTestMedia(dir, 'wav', 1) });
    await buildOnce();
  });
  after(async () => media?.close());

  it('resumes the schedule after kill -9 and delivers exactly one acknowledged callback', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '3s,3s' };
    let svc = await startService(env);
    const drive = await admin(env, 'drive', 'create', '--name', 'Hook drive');
    const receiver = await startWebhookReceiver({ secret: drive.webhook_secret });
    try {
      receiver.script([500, 200]);
      const res = await apiClient(svc, drive.token).post('/jobs/import/project_media', {
        project_name: 'Hooked',
        add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
        callback_url: receiver.url('/hook'),
      });
      assert.equal(res.status, 201);
      const { job_id } = (await res.json()) as { job_id: string };
      await receiver.waitFor(1, 30_000);
      // Between the attempts: once the first one's outcome is recorded, and before the second, 3 s
      // later. (Killed while the first was still being recorded, its claim would hold it for the
      // lease, 40 s, and it would be sent again: another scenario, at least once.)
      const deliveries = async () =>
        (await (await apiClient(svc, drive.token).get(`/jobs/${job_id}/deliveries`)).json()) as Record<string, any>;
      await waitFor(async () => (await deliveries()).attempts?.length === 1, {
        timeoutMs: 2500,
        intervalMs: 50,
        what: 'the first attempt to be recorded',
      });
      svc.killAll('SIGKILL');
      await svc.exited;
      svc = await startService(env);
      const delivered = await waitFor(
        async () => {
          const d = await deliveries();
          return d.state === 'delivered' ? d : null;
        },
        { timeoutMs: 30_000, intervalMs: 200, what: 'the delivery after the restart' },
      );
      assert.deepEqual(
        delivered.attempts.map((a: { outcome: string }) => a.outcome),
        ['retry', 'delivered'],
      );
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(receiver.received.length, 2, 'one failure, one acknowledged delivery');
      assert.ok(
        receiver.received.every((r) => r.verified),
        'signed with the drive secret',
      );
      assert.equal(receiver.received[0].headers['webhook-id'], receiver.received[1].headers['webhook-id']);
    } finally {
      svc.killAll('SIGTERM');
      await svc.exited;
      await receiver.close();
    }
  });
});
