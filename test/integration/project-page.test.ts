import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import supertest from 'supertest';
import { revokeToken } from '../../lib/app/admin';
import type { Word } from '../../lib/domain/edl';
import { JOBS } from '../../lib/read-models/jobs';
import { COMPOSITIONS } from '../../lib/read-models/compositions';
import { readProject } from '../../lib/read-models/projects';
import { formatSeconds } from '../../services/query-api/web/html';
import { safeNext } from '../../services/query-api/web/session';
import { paragraphs } from '../../lib/domain/transcript/paragraphs';
import { fakeOpenAiTranscriber, startFakeOpenAiServer } from '../fixtures/fake-openai-server';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { startMediaServer } from '../fixtures/media-server';
import { waitFor } from '../fixtures/wait';
import { launchChromium, listenFirst, skipWithoutChromium } from '../fixtures/browser';
import { webAppOn } from '../fixtures/web-app';

/**
 * The project page: server-rendered HTML behind a web sign-in (a session cookie from `POST /login`,
 * token, or a Bearer header), driven over HTTP and, when Debian's chromium is installed, in a
 * real headless browser. Projects are imported through the API with a fake OpenAI transcriber
 * (one word `w<i>` per second of audio), so compositions have real derived transcripts.
 */

const SCRIPT_NAME = '<script>alert(1)</script>';

const webApp = (h: Harness, webUrl: string) => webAppOn(h, webUrl);

/** The page's HTML with layout whitespace squeezed out, so assertions name content, not indentation. */
const squash = (res: supertest.Response): string =>
  res.text
    .replace(/\s+/g, ' ')
    .replace(/ (?=[<>])/g, '')
    .replace(/> (?=<)/g, '>');
const setCookies = (res: supertest.Response): string[] => ([] as string[]).concat(res.headers['set-cookie'] ?? []);

describe('project page (web sign-in, server-rendered HTML)', function () {
  this.timeout(120_000);
  let h: Harness;
  let media: Awaited<ReturnType<typeof startMediaServer>>;
  let openai: Awaited<ReturnType<typeof startFakeOpenAiServer>>;
  let web: ReturnType<typeof supertest>;
  /** The interview project: its id, the path of its job's project_url, and its import job. */
  let interview: { projectId: string; path: string; jobId: string; shortIds: string[] };
  let escaped: { projectId: string };
  let foreign: { projectId: string };

  /** The session cookie of a sign-in with `token`, one per token. */
  const sessions = new Map<string, Promise<string>>();
  const sessionOf = (token: string) => sessions.get(token) ?? sessions.set(token, h.signIn(token)).get(token)!;

  const importProject = async (body: Record<string, unknown>, token = h.drive.token) => {
    const res = await h.http.post('/v1/jobs/import/project_media').set(h.auth(token)).send(body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = await h.waitForJob(res.body.job_id, undefined, 30_000, token);
    assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
    const projectId = String(res.body.project_id);
    // The page reads the read models: wait until the projections caught up with the job.
    const project = await waitFor(
      async () => {
        const doc = await readProject(h.read, projectId);
        const jobDoc = await h.read.get(JOBS, res.body.job_id);
        if (!doc || jobDoc?.job_state !== 'stopped') return null;
        if (doc.media.length !== Object.keys(body.add_media as object).length) return null;
        const comps = await h.read.getMany(
          COMPOSITIONS,
          doc.compositions.map((c) => c.id),
        );
        return comps.length === doc.compositions.length && doc.compositions.length > 0 ? doc : null;
      },
      { timeoutMs: 10_000, what: `project ${projectId} in the read models` },
    );
    return { projectId, path: new URL(String(job.project_url)).pathname, jobId: String(res.body.job_id), project };
  };

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'project-page-'));
    const [voice, clip, still] = await Promise.all([makeTestMedia(dir, 'wav', 4), makeTestMedia(dir, 'mp4', 3), makeTestMedia(dir, 'png')]);
    media = await startMediaServer({ 'voice.wav': voice, 'clip.mp4': clip, 'still.png': still });
    openai = await startFakeOpenAiServer();
    const transcriber = fakeOpenAiTranscriber(openai.url);
    h = await startHarness({ transcriber });
    web = supertest(webApp(h, WEB_URL).callback());

    const [a, b, c] = await Promise.all([
      importProject({
        project_name: 'Interview',
        folder_name: 'Clients/Acme',
        add_media: {
          'voice.wav': { url: media.url('file', 'voice.wav') },
          'clip.mp4': { url: media.url('file', 'clip.mp4') },
          'still.png': { url: media.url('file', 'still.png') },
          pod: { tracks: [{ media: 'voice.wav' }, { media: 'clip.mp4', offset: 0.5 }] },
        },
        add_compositions: [
          { name: 'Main', clips: [{ media: 'voice.wav' }] },
          { name: 'Pod', clips: [{ media: 'pod' }] },
        ],
      }),
      importProject({
        project_name: SCRIPT_NAME,
        folder_name: '<b>folder</b>',
        add_media: { '"><img src=x onerror=alert(2)>.wav': { url: media.url('file', 'voice.wav') } },
        add_compositions: [{ name: '</h3><script>alert(3)</script>', clips: [{ media: '"><img src=x onerror=alert(2)>.wav' }] }],
      }),
      importProject(
        { project_name: 'Secret plans of the other drive', add_media: { 'voice.wav': { url: media.url('file', 'voice.wav') } } },
        h.other.token,
      ),
    ]);
    interview = { ...a, shortIds: a.project.compositions.map((x) => x.short_id) };
    escaped = b;
    foreign = c;
  });
  after(async () => {
    await h?.close();
    await media?.close();
    await openai?.close();
  });

  it('redirects a visitor without a session to the login form, remembering the page', async () => {
    const res = await web.get(interview.path);
    assert.equal(res.status, 303);
    assert.equal(res.headers.location, `/login?next=${encodeURIComponent(interview.path)}`);
    const form = await web.get(res.headers.location);
    assert.equal(form.status, 200);
    assert.match(form.headers['content-type'], /^text\/html/);
    assert.match(form.text, /<input type="password" name="token"/);
    assert.ok(squash(form).includes(`<input type="hidden" name="next" value="${interview.path}"`), form.text);
  });

  it('sends the security headers on pages, redirects and errors', async () => {
    for (const res of [
      await web.get(interview.path),
      await web.get('/login'),
      await web.get('/00000000-0000-4000-8000-000000000000/zzzzz').set(h.auth()),
    ]) {
      assert.match(res.headers['content-security-policy'], /default-src 'none'; style-src 'unsafe-inline'/);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['referrer-policy'], 'same-origin');
      assert.equal(res.headers['cache-control'], 'no-store');
    }
  });

  it('answers a bad token with 401 and the form again, setting no cookie', async () => {
    const res = await web.post('/login').type('form').send({ token: 'mps_0123456789abcdef_nope', next: interview.path });
    assert.equal(res.status, 401);
    assert.match(res.text, /not valid, or it was revoked/);
    assert.ok(res.text.includes(`value="${interview.path}"`), 'next is kept');
    assert.deepEqual(setCookies(res), []);
  });

  it('signs in with a valid token: an opaque session cookie, then a 303 to the page asked for', async () => {
    const res = await web
      .post('/login')
      .set('Origin', WEB_URL)
      .type('form')
      .send({ token: ` ${h.drive.token}\n`, next: interview.path });
    assert.equal(res.status, 303, res.text);
    assert.equal(res.headers.location, interview.path);
    const [cookie] = setCookies(res);
    assert.match(cookie, /^mps_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=3600; HttpOnly; SameSite=Lax$/);
    assert.ok(!cookie.includes(h.drive.token), 'the cookie is not the API token');

    const https = await supertest(webApp(h, 'https://web.example').callback()).post('/login').type('form').send({ token: h.drive.token });
    assert.equal(https.headers.location, '/', 'no next: the signed-in landing');
    assert.match(setCookies(https)[0], /; Secure$/, 'Secure when WEB_URL is https');

    const landing = await web.get('/').set('Cookie', cookie.split(';')[0]);
    assert.equal(landing.status, 200);
    assert.match(squash(landing), /signed in to the drive<strong>Test drive<\/strong>/);
  });

  it('shows the project to a member: name, folder, media with durations, transcripts with speakers, jobs', async () => {
    const res = await web.get(interview.path).set('Cookie', await sessionOf(h.drive.token));
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers['content-type'], /^text\/html; charset=utf-8/);
    const page = squash(res);
    assert.match(page, /<h1>Interview<\/h1>/);
    assert.match(page, /Folder: Clients\/Acme/);
    assert.match(page, /<td>voice\.wav<\/td><td>audio<\/td><td>0:04\.0<\/td>/);
    assert.match(page, /<td>clip\.mp4<\/td><td>video<\/td><td>0:03\.0<\/td>/);
    assert.match(page, /<td>still\.png<\/td><td>image<\/td><td><\/td>/, 'an image has no duration');
    assert.match(page, /tracks: voice\.wav, clip\.mp4/);
    // The transcript is derived from the clips: w0..w3 of the 4 s voice, one paragraph.
    assert.match(page, /<h3>Main<\/h3>[\s\S]*?<span class="tc">0:00\.0<\/span>w0 w1 w2 w3<\/p>/);
    // A sequence's tracks are its speakers, named where the speaker changes.
    assert.match(
      page,
      /<span class="speaker">voice\.wav:<\/span> w0<\/p><p><span class="tc">0:00\.5<\/span><span class="speaker">clip\.mp4:<\/span> w0/,
    );
    assert.match(
      page,
      new RegExp(
        `<td>${interview.jobId}</td><td>import/project_media</td><td>stopped</td><td>\\d{4}-\\d\\d-\\d\\d [\\d:]{8} UTC</td><td>success</td>`,
      ),
    );
  });

  it('puts the composition of the short id first and highlights it; an unknown short id is 404', async () => {
    const [, main, pod] = interview.shortIds;
    const res = await web.get(`/${interview.projectId}/${pod}`).set('Cookie', await sessionOf(h.drive.token));
    assert.equal(res.status, 200);
    const order = [...squash(res).matchAll(/<section class="composition( focus)?" id="c-(\w+)">/g)].map((m) => [m[2], !!m[1]]);
    assert.deepEqual(order, [
      [pod, true],
      [interview.shortIds[0], false],
      [main, false],
    ]);
    const unknown = interview.shortIds.includes('fffff') ? '00000' : 'fffff';
    for (const path of [`/${interview.projectId}/${unknown}`, `/${interview.projectId}/not-hex`]) {
      const miss = await web.get(path).set('Cookie', await sessionOf(h.drive.token));
      assert.equal(miss.status, 404, path);
      assert.match(miss.text, /There is no (composition fffff|composition 00000|such composition) in this project/);
    }
  });

  it('takes an Authorization: Bearer token instead of the cookie; a bad one is a 401 page', async () => {
    const res = await web.get(interview.path).set(h.auth());
    assert.equal(res.status, 200);
    assert.match(res.text, /<h1>Interview<\/h1>/);
    const bad = await web.get(interview.path).set(h.auth('mps_0123456789abcdef_' + 'x'.repeat(43)));
    assert.equal(bad.status, 401);
    assert.match(bad.headers['content-type'], /^text\/html/);
  });

  it('ends the session the moment its token is revoked, and clears the cookie', async () => {
    const fresh = await h.newToken();
    assert.equal((await web.get(interview.path).set('Cookie', await sessionOf(fresh.token))).status, 200);
    await revokeToken(h.admin, fresh.token_id);
    const res = await web.get(interview.path).set('Cookie', await sessionOf(fresh.token));
    assert.equal(res.status, 303);
    assert.match(res.headers.location, /^\/login\?next=/);
    assert.match(setCookies(res)[0], /^mps_session=; Path=\/; Max-Age=0/);
  });

  it("answers another drive's project with 403 without naming it", async () => {
    const res = await web.get(`/${foreign.projectId}`).set('Cookie', await sessionOf(h.drive.token));
    assert.equal(res.status, 403);
    assert.match(res.text, /not a project of your drive/);
    assert.doesNotMatch(res.text, /Secret plans/);
    const owner = await web.get(`/${foreign.projectId}`).set('Cookie', await sessionOf(h.other.token));
    assert.match(owner.text, /Secret plans of the other drive/, 'its own drive sees it');
  });

  it('answers 404 pages for a project that does not exist, and leaves other paths to the API', async () => {
    const other = await web.get('/not-a-uuid').set('Cookie', await sessionOf(h.drive.token));
    assert.equal(other.status, 404, 'not a page: the API answers it');
    for (const path of ['/12345678-1234-1234-1234-123456789abc', '/12345678-1234-1234-1234-123456789abc/abcde']) {
      const res = await web.get(path).set('Cookie', await sessionOf(h.drive.token));
      assert.equal(res.status, 404, path);
      assert.match(res.headers['content-type'], /^text\/html/);
      assert.match(res.text, /<h1>Not found<\/h1>/);
    }
  });

  it('renders user-chosen names as text: a project named <script> runs nothing', async () => {
    const res = await web.get(`/${escaped.projectId}`).set('Cookie', await sessionOf(h.drive.token));
    assert.equal(res.status, 200);
    assert.ok(squash(res).includes('<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>'), res.text);
    assert.ok(squash(res).includes('<title>&lt;script&gt;alert(1)&lt;/script&gt; ·'));
    assert.ok(squash(res).includes('&quot;&gt;&lt;img src=x onerror=alert(2)&gt;.wav'));
    assert.ok(squash(res).includes('<h3>&lt;/h3&gt;&lt;script&gt;alert(3)&lt;/script&gt;</h3>'));
    assert.ok(squash(res).includes('Folder: &lt;b&gt;folder&lt;/b&gt;'));
    assert.doesNotMatch(res.text, /<script|<img|<b>/);
  });

  it('lands only on a path of this site after signing in, whatever next says', async () => {
    const attempts = ['//evil.example', 'https://evil.example', '/\\evil.example', '/\t/evil.example', 'javascript:alert(1)', ''];
    for (const next of attempts) {
      const res = await web.post('/login').type('form').send({ token: h.drive.token, next });
      assert.equal(res.status, 303, next);
      assert.equal(res.headers.location, '/', JSON.stringify(next));
    }
    const form = await web.get(`/login?next=${encodeURIComponent('//evil.example')}`);
    assert.ok(form.text.includes('name="next" value="/"'));
    const kept = await web.post('/login').type('form').send({ token: h.drive.token, next: '/a/b?c=d' });
    assert.equal(kept.headers.location, '/a/b?c=d');
  });

  it("refuses a login posted from another site's page, and bodies that are too large or not a form", async () => {
    const foreignPost = await web.post('/login').set('Origin', 'https://evil.example').type('form').send({ token: h.drive.token });
    assert.equal(foreignPost.status, 403);
    assert.deepEqual(setCookies(foreignPost), []);
    const large = await web
      .post('/login')
      .type('form')
      .send(`token=${h.drive.token}&pad=${'x'.repeat(9000)}`);
    assert.equal(large.status, 413);
    const json = await web.post('/login').send({ token: h.drive.token });
    assert.equal(json.status, 415);
    assert.match(json.headers['content-type'], /^text\/html/);
  });

  it('signs out: the cookie is cleared and the browser goes to the login form', async () => {
    const res = await web
      .post('/logout')
      .set('Origin', WEB_URL)
      .set('Cookie', await h.signIn());
    assert.equal(res.status, 303);
    assert.equal(res.headers.location, '/login');
    assert.match(setCookies(res)[0], /^mps_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax$/);
    assert.equal((await web.post('/logout').set('Origin', 'https://evil.example')).status, 403);
  });

  it('leaves /v1 paths to the API mounted after it', async () => {
    const res = await web.get('/v1/projects').set('Cookie', await sessionOf(h.drive.token));
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found', 'the JSON fallback answered, not a page');
  });

  it('walks through sign-in in headless Chromium and shows the project', async function () {
    skipWithoutChromium(this);
    const site = await listenFirst();
    const browser = await launchChromium();
    try {
      const { base } = site;
      site.handle(webApp(h, base).callback());

      const page = await browser.newPage();
      const violations: string[] = [];
      page.on('console', (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
      await page.goto(`${base}${interview.path}`);
      assert.equal(page.url(), `${base}/login?next=${encodeURIComponent(interview.path)}`);
      await page.fill('input[name=token]', h.drive.token);
      await Promise.all([page.waitForURL(`${base}${interview.path}`, { timeout: 10_000 }), page.click('button[type=submit]')]);

      assert.equal(await page.textContent('h1'), 'Interview');
      const text = await page.innerText('body');
      for (const expected of ['voice.wav', 'clip.mp4', 'still.png', 'Main', 'w0 w1 w2 w3', interview.jobId, 'stopped', 'success']) {
        assert.ok(text.includes(expected), `${expected} in the page:\n${text}`);
      }
      const focused = await page.textContent('section.focus h3');
      assert.equal(focused, 'Main', 'the composition of the project_url is the highlighted one');
      const cookie = (await page.context().cookies()).find((c) => c.name === 'mps_session');
      assert.ok(cookie?.httpOnly && cookie.sameSite === 'Lax');
      assert.ok(!cookie.value.includes(h.drive.token), 'the browser holds a session id, not the API token');
      assert.deepEqual(violations, []);

      mkdirSync('test-results', { recursive: true });
      await page.screenshot({ path: 'test-results/project-page.png', fullPage: true });
      assert.ok(statSync('test-results/project-page.png').size > 1000);

      await Promise.all([page.waitForURL(`${base}/login`, { timeout: 10_000 }), page.click('text=Sign out')]);
      await page.goto(`${base}${interview.path}`);
      assert.match(page.url(), /\/login\?next=/, 'signed out: the page asks to sign in again');
    } finally {
      await browser.close();
      site.server.closeAllConnections();
      site.server.close();
    }
  });
});

describe('project page: formatting (pure)', () => {
  const word = (text: string, start: number, speaker: string | null = null): Word => ({
    text,
    start,
    end: start + 0.4,
    confidence: 1,
    speaker,
  });

  it('formats durations readably', () => {
    assert.equal(formatSeconds(65.3), '1:05.3');
    assert.equal(formatSeconds(0), '0:00.0');
    assert.equal(formatSeconds(59.96), '1:00.0');
    assert.equal(formatSeconds(3723.45), '1:02:03.5');
  });

  it('starts a paragraph on a speaker change, a pause or every 30 s, naming the speaker only where it changes', () => {
    const words = [word('a', 0, 'A'), word('b', 1, 'A'), word('c', 2, 'B'), word('d', 6, 'B'), word('e', 7, 'A')];
    assert.deepEqual(
      paragraphs(words).map(({ start, speakerLabel, text }) => ({ start, speakerLabel, text })),
      [
        { start: 0, speakerLabel: 'A', text: 'a b' },
        { start: 2, speakerLabel: 'B', text: 'c' },
        { start: 6, speakerLabel: null, text: 'd' },
        { start: 7, speakerLabel: 'A', text: 'e' },
      ],
    );
    const long = Array.from({ length: 70 }, (_, i) => word(`w${i}`, i));
    assert.deepEqual(
      paragraphs(long).map((p) => p.start),
      [0, 30, 60],
    );
    assert.ok(paragraphs(long).every((p) => p.speakerLabel === null));
  });

  it('keeps next only when it is a path of this site', () => {
    assert.equal(safeNext('/p/q?x=1'), '/p/q?x=1');
    for (const bad of ['//evil', '/\\evil', 'https://evil', 'evil', '/a\r\nSet-Cookie: x', '/a b', undefined, ['/a']]) {
      assert.equal(safeNext(bad), null, JSON.stringify(bad));
    }
  });
});
