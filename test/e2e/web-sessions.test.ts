import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin, buildOnce, startService, type ServiceProcess } from '../fixtures/service-process';
import { waitFor } from '../fixtures/wait';

/**
 * Web sessions in the real process (`npm start`), with the admin CLI as its own process: the
 * sessions live in DATA_DIR/read.sqlite, and the revocation comes from another process.
 */
describe('e2e: web sessions', function () {
  this.timeout(120_000);
  let svc: ServiceProcess;
  let env: Record<string, string>;

  before(async () => {
    await buildOnce();
    env = { DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-web-')), WEB_SESSION_TTL: '3s', WEB_FORM_RATE_LIMIT_PER_MINUTE: '20' };
    svc = await startService(env);
  });
  after(async () => {
    svc?.killAll('SIGTERM');
    await svc?.exited;
  });

  /** Signs in over HTTP as a browser would (no Origin: allowed); the `Cookie` header of the session. */
  async function signIn(token: string): Promise<string> {
    const res = await fetch(`${svc.base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
      redirect: 'manual',
    });
    assert.equal(res.status, 303, await res.text());
    const cookie = res.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^mps_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=3; HttpOnly; SameSite=Lax$/);
    return cookie.split(';')[0];
  }
  const landing = (cookie: string) => fetch(`${svc.base}/`, { headers: { cookie }, redirect: 'manual' });

  it('ends a session when the admin CLI revokes its token, and never takes the cookie on /v1', async () => {
    const drive = await admin(env, 'drive', 'create', '--name', 'Web drive');
    const cookie = await signIn(drive.token);
    assert.ok(!cookie.includes(drive.token));
    assert.equal((await landing(cookie)).status, 200);
    const onApi = await fetch(`${svc.base}/v1/status`, { headers: { authorization: `Bearer ${cookie.split('=')[1]}` } });
    assert.equal(onApi.status, 401);

    const revoked = await admin(env, 'token', 'revoke', '--token-id', drive.token.split('_')[1]);
    assert.ok(revoked);
    // The authenticator's cache (1 s) bounds the bearer path; a session is checked on each use.
    const after = await landing(cookie);
    assert.equal(after.status, 303);
    assert.match(after.headers.get('location') ?? '', /^\/login\?next=/);
  });

  it('expires a session after WEB_SESSION_TTL even when the cookie is sent again', async () => {
    const drive = await admin(env, 'drive', 'create', '--name', 'Expiry drive');
    const cookie = await signIn(drive.token);
    assert.equal((await landing(cookie)).status, 200);
    await waitFor(async () => (await landing(cookie)).status === 303, {
      timeoutMs: 30_000,
      intervalMs: 250,
      what: 'the session to expire',
    });
  });
});
