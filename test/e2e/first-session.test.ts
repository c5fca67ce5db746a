import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { admin, buildOnce, inheritedEnv, ROOT, startService, type ServiceProcess } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

/**
 * The first session of the README against the built process, as `npm start` runs it: the build
 * is not redone when current, start-up says what it runs with (no secret) and that transcription
 * is off, a file served on loopback imports by a localhost URL with OUTBOUND_ALLOWLIST=127.0.0.1,
 * a curl-style form POST is a 415 whose access line carries the error, and the admin CLI lists
 * drives and tokens without secrets.
 */
describe('e2e: a first session', function () {
  this.timeout(120_000);
  const run = promisify(execFile);
  let media: Awaited<ReturnType<typeof startMediaServer>>;

  before(async () => {
    media = await startMediaServer({ 'hello.wav': await makeTestMedia(mkdtempSync(join(tmpdir(), 'first-session-')), 'wav', 1) });
    await buildOnce();
  });
  after(async () => media?.close());

  const lines = (svc: ServiceProcess) =>
    svc
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, any>);

  it('`npm run build` rewrites nothing in dist/ when it is current (so `npm start` starts at once)', async () => {
    const mtimes = () => new Map(walk(join(ROOT, 'dist')).map((f) => [f, statSync(f).mtimeMs]));
    const before = mtimes();
    await run('npm', ['run', 'build', '--silent'], { cwd: ROOT, env: inheritedEnv() });
    const changed = [...mtimes()].filter(([f, t]) => before.get(f) !== t).map(([f]) => f);
    assert.deepEqual(changed, []);
  });

  it('starts with a line of its configuration and a warning that transcription is off; imports from localhost', async () => {
    const env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'first-session-data-')), OUTBOUND_ALLOWLIST: '127.0.0.1' };
    const svc = await startService(env);
    try {
      await waitFor(() => lines(svc).some((l) => l.msg === 'serve started'), { what: 'the start-up line' });
      const started = lines(svc).find((l) => l.msg === 'serve started')!;
      assert.equal(started.level, 'info');
      assert.match(started.time, /^\d{4}-\d\d-\d\dT/);
      assert.equal(started.config.mode, 'embedded');
      assert.equal(started.config.transcriber, 'none');
      assert.equal(started.config.outbound_allowlist, '127.0.0.1');
      assert.equal(started.config.data_dir, env.DATA_DIR);
      const warning = lines(svc).find((l) => l.level === 'warn' && /transcription is off/.test(l.msg));
      assert.ok(warning, svc.output());
      assert.match(warning.msg, /TRANSCRIBER=openai/);
      assert.equal(lines(svc).filter((l) => /started$/.test(l.msg)).length, 1, 'the worker does not say it again');

      const drive = await admin(env, 'drive', 'create', '--name', 'First');
      const post = (body: string, type: string, requestId: string) =>
        fetch(`${svc.base}/v1/jobs/import/project_media`, {
          method: 'POST',
          headers: { authorization: `Bearer ${drive.token}`, 'content-type': type, 'x-request-id': requestId },
          body,
        });
      const body = JSON.stringify({
        project_name: 'Hello',
        add_media: { 'hello.wav': { url: localhost(media.url('file', 'hello.wav')) } },
      });
      const form = await post(body, 'application/x-www-form-urlencoded', 'first-form');
      assert.equal(form.status, 415);
      const accepted = await post(body, 'application/json', 'first-json');
      assert.equal(accepted.status, 201, await accepted.clone().text());
      const access = await waitFor(() => lines(svc).find((l) => l.msg === 'request' && l.request_id === 'first-form'), {
        what: 'the access line of the 415',
      });
      assert.equal(access.status, 415);
      assert.equal(access.error_code, 'invalid_input');
      assert.match(access.error_message, /Content-Type must be application\/json/);
      const { job_id } = (await accepted.json()) as { job_id: string };
      const job = await waitFor(
        async () => {
          const res = await fetch(`${svc.base}/v1/jobs/${job_id}`, { headers: { authorization: `Bearer ${drive.token}` } });
          const j = (await res.json()) as Record<string, any>;
          return j.job_state === 'stopped' ? j : null;
        },
        { timeoutMs: 30_000, intervalMs: 100, what: 'the import to stop' },
      );
      assert.deepEqual(job.result.media_status['hello.wav'], { status: 'success', duration_seconds: 1, transcript: 'skipped' });

      const drives = (await admin(env, 'drive', 'list')) as unknown as Record<string, unknown>[];
      assert.deepEqual(drives, [
        { drive_id: drive.drive_id, drive_name: 'First', partner: false, media_seconds_allowance: null, tokens: 1 },
      ]);
      const shown = await admin(env, 'drive', 'show', '--drive', drive.drive_id);
      assert.equal(shown.drive_name, 'First');
      assert.deepEqual(shown.jobs, { unfinished: 0 }, 'the import stopped: nothing queued or running');
      const tokens = (await admin(env, 'token', 'list', '--drive', drive.drive_id)) as unknown as Record<string, unknown>[];
      assert.equal(tokens.length, 1);
      assert.deepEqual(Object.keys(tokens[0]).sort(), [
        'created_at',
        'drive_id',
        'first_name',
        'last_name',
        'name',
        'revoked',
        'token_id',
        'user_id',
      ]);
      assert.ok(drive.token.includes(String(tokens[0].token_id)));
    } finally {
      svc.killAll('SIGTERM');
      await svc.exited;
    }
  });

  it('prints no secret at start-up, and no warning with a transcriber', async () => {
    const secrets = {
      TRANSCRIBER_API_KEY: 'sk-never-printed-1',
      SIGNING_SECRET: 'signing-never-printed-2',
      password: 'pw-never-printed-3',
    };
    const env = {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'first-session-data-')),
      TRANSCRIBER: 'openai',
      TRANSCRIBER_URL: `http://whisper:${secrets.password}@127.0.0.1:9/v1`,
      TRANSCRIBER_API_KEY: secrets.TRANSCRIBER_API_KEY,
      SIGNING_SECRET: secrets.SIGNING_SECRET,
    };
    const svc = await startService(env);
    try {
      await waitFor(() => lines(svc).some((l) => l.msg === 'serve started'), { what: 'the start-up line' });
      const { config } = lines(svc).find((l) => l.msg === 'serve started')!;
      assert.equal(config.transcriber, 'openai');
      assert.equal(config.transcriber_url, 'http://***@127.0.0.1:9/v1');
      assert.equal(config.transcriber_api_key, 'set');
      for (const secret of Object.values(secrets)) assert.ok(!svc.output().includes(secret), `${secret} printed`);
      assert.ok(!lines(svc).some((l) => /transcription is off/.test(l.msg)));
    } finally {
      svc.killAll('SIGTERM');
      await svc.exited;
    }
  });
});

const localhost = (url: string) => url.replace('127.0.0.1', 'localhost');

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}
