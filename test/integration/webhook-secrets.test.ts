import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDrive, createToken, updateDrive } from '../../lib/app/admin';
import { generateWebhookSecret } from '../../lib/app/tokens';
import { streams } from '../../lib/domain/ids';
import { startHarness, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';
import { signedWith, startWebhookReceiver } from '../fixtures/webhook-receiver';

/**
 * Webhook secrets are sealed in the drive events (lib/ports/secret-box.ts): the events hold no
 * usable secret, deliveries are signed as before, and a drive whose secret was stored in plain
 * text before sealing existed keeps receiving deliveries it can verify.
 */
describe('webhook secrets sealed in the events (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-secrets-'));
    media = await startMediaServer({ 'voice.wav': await makeTestMedia(dir, 'wav', 1) });
    h = await startHarness({ webhooks: { scheduleSeconds: [0.3], timeoutMs: 2000 } });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await h?.close();
    await media?.close();
    await receiver?.close();
  });

  const driveEvents = async (driveId: string) => JSON.stringify(await h.store.readStream(streams.drive(driveId)));
  /** The body (after `whsec_`) is the key: no event may carry it, whole or as a prefix. */
  const keyOf = (secret: string) => secret.slice('whsec_'.length);

  /** Imports one file with a callback to `path` and resolves the request that arrived there. */
  async function deliveredTo(path: string, token: string) {
    const res = await h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(token))
      .send({
        project_name: `Hook ${path}`,
        add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } },
        callback_url: receiver.url(path),
      });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return waitFor(() => receiver.received.find((r) => r.path === path), { timeoutMs: 20_000, what: `the delivery to ${path}` });
  }
  const verifies = signedWith;

  it('keeps the secret out of the drive events, at creation and after a rotation, and signs with the current one', async () => {
    const created = h.drive.webhook_secret;
    assert.ok(!(await driveEvents(h.drive.drive_id)).includes(keyOf(created)), 'the created secret is not in the events');
    const first = await deliveredTo('/created', h.drive.token);
    assert.ok(verifies(created, first), 'signed with the secret shown at creation');

    const rotated = generateWebhookSecret();
    const shown = await updateDrive(h.admin, h.drive.drive_id, { webhook_secret: rotated });
    assert.equal(shown.webhook_secret, rotated, 'the new secret is shown once, in plain text');
    const events = await driveEvents(h.drive.drive_id);
    for (const secret of [created, rotated]) assert.ok(!events.includes(keyOf(secret)), 'neither secret is in the events');
    const second = await deliveredTo('/rotated', h.drive.token);
    assert.ok(verifies(rotated, second), 'signed with the rotated secret');
    assert.ok(!verifies(created, second), 'not with the old one');
  });

  it('still signs for a drive whose secret was stored in plain text before sealing, and seals it at its rotation', async () => {
    // What the admin CLI wrote before: no SecretBox, the secret as it is in DriveCreated.
    const legacy = await createDrive({ store: h.store, clock: h.admin.clock, ids: h.admin.ids }, { name: 'Legacy drive' });
    assert.ok((await driveEvents(legacy.drive_id)).includes(legacy.webhook_secret), 'the fixture is a plain-text drive');
    const first = await deliveredTo('/legacy', legacy.token);
    assert.ok(verifies(legacy.webhook_secret, first), 'signed with the plain-text secret');

    const rotated = generateWebhookSecret();
    await updateDrive(h.admin, legacy.drive_id, { webhook_secret: rotated });
    assert.ok(!(await driveEvents(legacy.drive_id)).includes(keyOf(rotated)), 'the new secret is sealed');
    const { token } = await createToken(h.admin, { driveId: legacy.drive_id });
    const second = await deliveredTo('/legacy-rotated', token);
    assert.ok(verifies(rotated, second), 'signed with the rotated secret');
    assert.ok(!verifies(legacy.webhook_secret, second), 'the plain-text secret left in the old event no longer signs');
  });
});
