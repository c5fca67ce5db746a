import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, apiClient, buildOnce, startService, type ServiceProcess } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';
import { signedWith, startWebhookReceiver } from '../fixtures/webhook-receiver';

/**
 * Secrets at rest, as `npm start` and the admin CLI leave them: DATA_DIR and everything in it is
 * the service user's alone, and neither the event store's file nor its WAL holds a usable
 * webhook secret, after a drive's creation or after a rotation; deliveries verify with the
 * current secret.
 */
describe('e2e: secrets at rest in DATA_DIR', function () {
  this.timeout(120_000);
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let wav: string;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'e2e-media-'));
    wav = await makeTestMedia(dir, 'wav', 1);
    media = await startMediaServer({ 'talk.wav': wav });
    receiver = await startWebhookReceiver();
    await buildOnce();
  });
  after(async () => {
    await media?.close();
    await receiver?.close();
  });

  /** Every folder and file under `root` (itself included) whose mode is not 0700 / 0600. */
  function looseModes(root: string): string[] {
    const loose: string[] = [];
    const check = (path: string) => {
      const stats = statSync(path);
      const want = stats.isDirectory() ? 0o700 : 0o600;
      if ((stats.mode & 0o777) !== want) loose.push(`${relative(root, path) || '.'} ${(stats.mode & 0o777).toString(8)}`);
      if (stats.isDirectory()) for (const name of readdirSync(path)) check(join(path, name));
    };
    check(root);
    return loose;
  }

  /** Files under `root` (the key file aside) whose bytes hold `needle`. */
  function filesHolding(root: string, needle: string): string[] {
    const entries = readdirSync(root, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[];
    return entries
      .filter((e) => e.isFile() && e.name !== 'secrets.key')
      .map((e) => join(e.parentPath ?? e.path, e.name))
      .filter((path) => readFileSync(path).includes(needle));
  }

  async function deliveredTo(svc: ServiceProcess, token: string, path: string) {
    const res = await apiClient(svc, token).post('/jobs/import/project_media', {
      project_name: `Hook ${path}`,
      add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } },
      callback_url: receiver.url(path),
    });
    assert.equal(res.status, 201, await res.text());
    return waitFor(() => receiver.received.find((r) => r.path === path), { timeoutMs: 30_000, what: `the delivery to ${path}` });
  }
  const verifies = signedWith;

  it('keeps DATA_DIR 0700 and its files 0600, with no webhook secret in the event store or its WAL', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'e2e-secrets-')), 'data');
    const env = { DATA_DIR: dataDir, OUTBOUND_ALLOWLIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1s' };
    let svc = await startService(env);
    try {
      const drive = await admin(env, 'drive', 'create', '--name', 'Secret drive');
      const created = drive.webhook_secret;
      assert.match(created, /^whsec_/);
      assert.ok(verifies(created, await deliveredTo(svc, drive.token, '/created')), 'signed with the secret shown at creation');

      const rotated = (await admin(env, 'drive', 'update', '--drive', drive.drive_id, '--rotate-webhook-secret')).webhook_secret;
      assert.match(rotated, /^whsec_/);
      const after = await deliveredTo(svc, drive.token, '/rotated');
      assert.ok(verifies(rotated, after) && !verifies(created, after), 'signed with the rotated secret only');

      // Half an upload, so that a staged part is on disk too.
      const bytes = readFileSync(wav);
      const upload = await apiClient(svc, drive.token).post('/jobs/import/project_media', {
        project_name: 'Half uploaded',
        add_media: { 'half.wav': { content_type: 'audio/wav', file_size: bytes.length } },
      });
      const { upload_urls } = (await upload.json()) as { upload_urls: Record<string, { upload_url: string }> };
      const half = Math.floor(bytes.length / 2);
      const put = await fetch(upload_urls['half.wav'].upload_url, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream', 'content-range': `bytes 0-${half - 1}/${bytes.length}` },
        body: bytes.subarray(0, half),
      });
      assert.equal(put.status, 308);

      const names = readdirSync(dataDir);
      for (const name of ['events.sqlite', 'events.sqlite-wal', 'read.sqlite', 'blobs', 'uploads', 'secrets.key']) {
        assert.ok(names.includes(name), `${name} is in DATA_DIR (${names.join(', ')})`);
      }
      assert.deepEqual(looseModes(dataDir), [], 'every folder 0700, every file 0600');
      for (const secret of [created, rotated]) {
        const key = secret.slice('whsec_'.length);
        assert.deepEqual(filesHolding(dataDir, key), [], 'no file of DATA_DIR (the key file aside) holds a webhook secret');
      }

      // An older DATA_DIR, open to others, is tightened at the next start.
      svc.child.kill('SIGTERM');
      assert.equal(await svc.exited, 0);
      chmodSync(dataDir, 0o755);
      chmodSync(join(dataDir, 'events.sqlite'), 0o644);
      svc = await startService(env);
      assert.equal(statSync(dataDir).mode & 0o777, 0o700);
      assert.equal(statSync(join(dataDir, 'events.sqlite')).mode & 0o777, 0o600);
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
  });
});
