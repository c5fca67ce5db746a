import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startHarness, type Harness } from '../fixtures/harness';

/**
 * Issue 19, finding 7: a trailing dot (`localhost.`) must not slip past the request-time check,
 * and the admin CLI must refuse a host allow list entry that could never match, naming it.
 */
const ROOT = join(__dirname, '..', '..');

describe('host names with a trailing dot, at request time', function () {
  let h: Harness;
  // No loopback listed: with 127.0.0.1 listed, `localhost` and `localhost.` (the same name) are allowed.
  before(async () => (h = await startHarness({ processors: false, allowlist: ['10.1.2.3'] })));
  after(async () => h?.close());

  for (const host of ['localhost.', 'foo.localhost.', 'LOCALHOST.:8080']) {
    it(`refuses ${host} as callback_url and as a media URL with 400 naming the field`, async () => {
      const callback = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send({ project_name: 'x', add_media: { 'a.wav': { url: 'https://media.example/a.wav' } }, callback_url: `http://${host}/hook` });
      assert.equal(callback.status, 400, JSON.stringify(callback.body));
      assert.equal(callback.body.error, 'invalid_input');
      assert.match(callback.body.message, /callback_url.*loopback/);
      const media = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .send({ project_name: 'x', add_media: { 'a.wav': { url: `http://${host}/a.wav` } } });
      assert.equal(media.status, 400, JSON.stringify(media.body));
      assert.match(media.body.message, /a\.wav.*loopback/);
    });
  }
});

describe('admin drive update --host-allow-list', function () {
  this.timeout(60_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'allow-lists-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  /** The admin CLI as an operator runs it (through tsx, no build needed): exit code, stdout, stderr. */
  async function adminCli(...args: string[]) {
    try {
      const { stdout, stderr } = await promisify(execFile)(
        process.execPath,
        ['--require', require.resolve('tsx/cjs'), 'bin/admin.ts', ...args],
        {
          cwd: ROOT,
          env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
        },
      );
      return { code: 0, stdout, stderr };
    } catch (err) {
      const failed = err as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  for (const entry of ['*', 'http://x.com', 'a b', '10.0.0.0/8']) {
    it(`refuses ${JSON.stringify(entry)}, naming it, and changes nothing`, async () => {
      const run = await adminCli(
        'drive',
        'update',
        '--drive',
        '00000000-0000-4000-8000-000000000000',
        '--host-allow-list',
        `cdn.example,${entry}`,
      );
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, /--host-allow-list/);
      assert.ok(run.stderr.includes(`"${entry}"`), run.stderr);
      assert.equal(run.stdout, '');
    });
  }

  it('keeps host names and IP addresses as they are compared (lower case, no trailing dot)', async () => {
    const created = await adminCli('drive', 'create', '--name', 'Partner', '--partner');
    assert.equal(created.code, 0, created.stderr);
    const { drive_id } = JSON.parse(created.stdout);
    const updated = await adminCli('drive', 'update', '--drive', drive_id, '--host-allow-list', ' CDN.Example.com. ,10.1.2.3');
    assert.equal(updated.code, 0, updated.stderr);
    assert.deepEqual(JSON.parse(updated.stdout).settings.host_allow_list, ['cdn.example.com', '10.1.2.3']);
  });
});
