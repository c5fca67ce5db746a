import assert from 'node:assert/strict';
import supertest from 'supertest';
import { systemClock } from '../../lib/adapters/system/clock';
import { revokeToken } from '../../lib/app/admin';
import { WEB_SESSIONS } from '../../lib/app/web-sessions';
import { webAppOn } from '../fixtures/web-app';
import { launchChromium, listenFirst, skipWithoutChromium } from '../fixtures/browser';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { waitFor } from '../fixtures/wait';

/**
 * Web sessions (issue 19, finding 5): the cookie was the API token itself, so it worked on /v1
 * and signing out revoked nothing; `POST /login` and `/import` had no limit. Driven over real
 * HTTP through the whole service's server (harness), and in headless Chromium when installed.
 */

const TTL_SECONDS = 2;
const sessionIdOf = (cookieHeader: string) => cookieHeader.replace(/^mps_session=/, '');
const setCookies = (res: supertest.Response): string[] => ([] as string[]).concat(res.headers['set-cookie'] ?? []);

describe('web sessions', function () {
  this.timeout(60_000);
  let h: Harness;

  before(async () => {
    h = await startHarness({ processors: false, webSessionTtlSeconds: TTL_SECONDS });
  });
  after(async () => h?.close());

  const landing = (cookie: string) => h.http.get('/').set('Cookie', cookie);

  it('puts an opaque session id in the cookie, never the API token', async () => {
    const res = await h.http.post('/login').set('Origin', WEB_URL).type('form').send({ token: h.drive.token });
    assert.equal(res.status, 303, res.text);
    const [cookie] = setCookies(res);
    assert.match(cookie, new RegExp(`^mps_session=[A-Za-z0-9_-]{43}; Path=/; Max-Age=${TTL_SECONDS}; HttpOnly; SameSite=Lax$`));
    const id = sessionIdOf(cookie.split(';')[0]);
    assert.ok(!id.includes(h.drive.token) && !h.drive.token.includes(id), 'the cookie is not the token');
    assert.ok(!JSON.stringify(await h.read.find(WEB_SESSIONS, {})).includes(id), 'the store keeps a hash of the id, not the id');
    assert.equal((await landing(cookie.split(';')[0])).status, 200);
    const again = setCookies(await h.http.post('/login').set('Origin', WEB_URL).type('form').send({ token: h.drive.token }))[0];
    assert.notEqual(again.split(';')[0], cookie.split(';')[0], 'each sign-in is a session of its own');
  });

  it('does not authorize /v1 with the session id, as a bearer token or as a cookie', async () => {
    const cookie = await h.signIn();
    const asBearer = await h.http.get('/v1/status').set('Authorization', `Bearer ${sessionIdOf(cookie)}`);
    assert.equal(asBearer.status, 401);
    assert.equal(asBearer.body.error, 'unauthorized');
    const asCookie = await h.http.get('/v1/status').set('Cookie', cookie);
    assert.equal(asCookie.status, 401);
    assert.equal(asCookie.body.error, 'unauthorized');
    assert.equal((await h.http.get('/v1/status').set(h.auth())).status, 200, 'the token itself still works');
  });

  it('ends the session on sign-out: the same cookie sent again asks to sign in', async () => {
    const cookie = await h.signIn();
    assert.equal((await landing(cookie)).status, 200);
    const out = await h.http.post('/logout').set('Origin', WEB_URL).set('Cookie', cookie);
    assert.equal(out.status, 303);
    const replayed = await landing(cookie);
    assert.equal(replayed.status, 303, 'a copy of the cookie kept after signing out no longer works');
    assert.match(replayed.headers.location, /^\/login\?next=/);
    assert.match(setCookies(replayed)[0], /^mps_session=; Path=\/; Max-Age=0/);
    assert.equal((await h.http.get('/v1/status').set(h.auth())).status, 200, 'signing out does not revoke the token');
  });

  it('ends every session of a token when the token is revoked', async () => {
    const fresh = await h.newToken();
    const [one, two] = [await h.signIn(fresh.token), await h.signIn(fresh.token)];
    assert.equal((await landing(one)).status, 200);
    await revokeToken(h.admin, fresh.token_id);
    for (const cookie of [one, two]) {
      const res = await landing(cookie);
      assert.equal(res.status, 303);
      assert.match(res.headers.location, /^\/login\?next=/);
    }
    assert.equal((await h.http.post('/login').set('Origin', WEB_URL).type('form').send({ token: fresh.token })).status, 401);
  });

  it('honours the session lifetime on the server, whatever the client keeps sending', async () => {
    const cookie = await h.signIn();
    const signedInAt = Date.now();
    assert.equal((await landing(cookie)).status, 200, 'live right after signing in');
    const expired = await waitFor(
      async () => {
        const res = await landing(cookie);
        return res.status === 303 ? res : null;
      },
      { timeoutMs: 20_000, intervalMs: 200, what: 'the session to expire' },
    );
    assert.ok(Date.now() - signedInAt >= TTL_SECONDS * 1000 - 50, 'not before its lifetime');
    assert.match(expired.headers.location, /^\/login\?next=/);
    assert.match(setCookies(expired)[0], /^mps_session=; Path=\/; Max-Age=0/, 'the browser is told to drop it');
    assert.equal((await landing(cookie)).status, 303, 'and it stays refused');
  });

  it('drops expired sessions from the store when someone signs in', async () => {
    await h.signIn();
    await waitFor(async () => (await h.read.find(WEB_SESSIONS, { expires_at: { $lte: new Date().toISOString() } })).length > 0, {
      timeoutMs: 20_000,
      intervalMs: 200,
      what: 'a session to expire',
    });
    const sweptAt = new Date().toISOString();
    await h.signIn();
    const expired = await h.read.find(WEB_SESSIONS, { expires_at: { $lte: sweptAt } });
    assert.deepEqual(expired, [], 'a sign-in swept the expired ones');
  });
});

describe('web forms: per-address rate limits', function () {
  this.timeout(60_000);
  const LIMIT = 5;
  let h: Harness;

  before(async () => {
    h = await startHarness({ processors: false });
  });
  after(async () => h?.close());

  /** The web pages as createApiApp mounts them, with their own limiter of LIMIT per minute. */
  function webApp(trustedProxyHops: number) {
    const imports = {
      store: h.store,
      clock: systemClock,
      ids: h.processorDeps.ids,
      webUrl: WEB_URL,
      urlRefusal: () => null,
      balance: h.balance,
    };
    return supertest(webAppOn(h, WEB_URL, { formsPerMinute: LIMIT, more: { trustedProxyHops, imports } }).callback());
  }
  const login = (web: ReturnType<typeof webApp>, forwardedFor?: string) => {
    const req = web.post('/login').type('form');
    if (forwardedFor) req.set('X-Forwarded-For', forwardedFor);
    return req.send({ token: 'mps_0123456789abcdef_' + 'x'.repeat(43) });
  };

  it('answers the login after the limit from one address with a 429 page and Retry-After', async () => {
    const web = webApp(0);
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT; i++) statuses.push((await login(web)).status);
    assert.deepEqual(statuses, Array(LIMIT).fill(401), 'wrong tokens, each answered');
    const over = await login(web);
    assert.equal(over.status, 429);
    assert.match(over.headers['content-type'], /^text\/html/);
    assert.match(over.text, /Too many sign-in attempts from your address/);
    const retryAfter = Number(over.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${over.headers['retry-after']}`);
    assert.equal(over.headers['x-ratelimit-remaining'], '0');
    const good = await web.post('/login').type('form').send({ token: h.drive.token });
    assert.equal(good.status, 429, 'not even with a good token');
    assert.deepEqual(setCookies(good), []);
  });

  it('is not reset by a made-up X-Forwarded-For when no proxy is trusted', async () => {
    const web = webApp(0);
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i++) statuses.push((await login(web, `203.0.113.${i}`)).status);
    assert.equal(statuses.at(-1), 429, statuses.join(' '));
  });

  it("counts by the trusted proxy's entry: two clients apart, and a client's own prefix ignored", async () => {
    const web = webApp(1);
    for (let i = 0; i < LIMIT; i++) assert.equal((await login(web, `10.9.9.${i}, 198.51.100.7`)).status, 401);
    assert.equal((await login(web, '198.51.100.7')).status, 429, 'the same client behind the proxy');
    assert.equal((await login(web, '198.51.100.8')).status, 401, 'another client has its own limit');
  });

  it('limits GET and POST /import per address as well', async () => {
    const web = webApp(0);
    const cookie = await h.signIn();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const req =
        i % 2
          ? web.post('/import').set('Cookie', cookie).type('form').send({ nonce: 'nope' })
          : web.get('/import?nonce=nope').set('Cookie', cookie);
      statuses.push((await req).status);
    }
    assert.deepEqual(statuses, Array(LIMIT).fill(404), 'an unknown link, each answered');
    const over = await web.get('/import?nonce=nope').set('Cookie', cookie);
    assert.equal(over.status, 429);
    assert.match(over.text, /Too many imports from your address/);
    assert.ok(Number(over.headers['retry-after']) >= 1);
    assert.equal((await login(web)).status, 401, 'sign-ins are counted apart from imports');
  });
});

describe('web sessions in headless Chromium', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ processors: false });
  });
  after(async () => h?.close());

  it('holds a session id that is not the token, useless on /v1, and dead after signing out', async function () {
    skipWithoutChromium(this);
    const site = await listenFirst();
    const browser = await launchChromium();
    try {
      const { base } = site;
      const app = webAppOn(h, base, { formsPerMinute: 100 });
      site.handle(app.callback());

      const page = await browser.newPage();
      await page.goto(`${base}/`);
      assert.match(page.url(), /\/login\?next=/);
      await page.fill('input[name=token]', h.drive.token);
      await Promise.all([page.waitForURL(`${base}/`, { timeout: 10_000 }), page.click('button[type=submit]')]);
      assert.match(await page.innerText('body'), /Test drive/);

      const cookie = (await page.context().cookies()).find((c) => c.name === 'mps_session');
      assert.ok(cookie, 'the browser holds a session cookie');
      assert.ok(cookie.httpOnly && cookie.sameSite === 'Lax');
      assert.notEqual(cookie.value, h.drive.token);
      assert.ok(!cookie.value.includes(h.drive.token));
      assert.equal((await h.http.get('/v1/status').set('Authorization', `Bearer ${cookie.value}`)).status, 401);

      await Promise.all([page.waitForURL(`${base}/login`, { timeout: 10_000 }), page.click('text=Sign out')]);
      const replayed = await fetch(`${base}/`, { headers: { cookie: `mps_session=${cookie.value}` }, redirect: 'manual' });
      assert.equal(replayed.status, 303, 'the cookie the browser held is dead on the server too');
    } finally {
      await browser.close();
      site.server.closeAllConnections();
      site.server.close();
    }
  });
});
