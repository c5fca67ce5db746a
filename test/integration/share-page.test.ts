import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import supertest from 'supertest';
import { createDrive, createToken } from '../../lib/app/admin';
import { handleCommand } from '../../lib/app/command-handler';
import { streams } from '../../lib/domain/ids';
import { projectDecider } from '../../lib/domain/project';
import type { AccessLevel } from '../../lib/domain/tenancy';
import { PROJECTS } from '../../lib/read-models/projects';
import { launchChromium, listenFirst, skipWithoutChromium } from '../fixtures/browser';
import { webAppOn } from '../fixtures/web-app';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { captionsOf, failPublish, finishPublish, makeRender, startPublish, type Published } from '../fixtures/publications';
import { waitFor } from '../fixtures/wait';

/**
 * The share page `{WEB_URL}/s/{slug}` (issue 21): over HTTP for its HTML, headers and access
 * rules, and in Debian's chromium (playwright-core) for what a viewer gets: the player loads the
 * render, plays it, and has its captions track with cues. Publications are written as the
 * publish processor writes them, with real ffmpeg renders (test/fixtures/publications.ts).
 */

/** A title that would break out of an attribute or a text node if it were not escaped. */
const HOSTILE_TITLE = `Tom's "cut" <script>alert(1)</script> & more`;

const webApp = (h: Harness, webUrl: string) => webAppOn(h, webUrl);

const squash = (text: string): string => text.replace(/\s+/g, ' ');

describe('share page /s/{slug}', function () {
  this.timeout(180_000);
  let h: Harness;
  let web: ReturnType<typeof supertest>;
  let files: { video: string; audio: string };
  let drive: { id: string; publisher: { token: string; userId: string }; colleague: { token: string } };
  let outsider: { token: string };
  /** The partner's project and a plain one, in the publishing drive. */
  let projects: { partner: string; plain: string };
  const PARTNER_DRIVE = randomUUID();
  const SOURCE_ID = randomUUID();
  const pages = {} as Record<AccessLevel | 'audio' | 'processing' | 'failed', Published>;
  const cookies = new Map<string, Promise<string>>();
  const sessionOf = (token: string) => cookies.get(token) ?? cookies.set(token, h.signIn(token)).get(token)!;

  async function createProject(partner: { partner_drive_id: string; source_id: string | null } | null): Promise<string> {
    const projectId = randomUUID();
    await handleCommand(
      h.store,
      streams.project(projectId),
      projectDecider,
      {
        type: 'CreateProject',
        project: {
          project_id: projectId,
          drive_id: drive.id,
          name: 'Shared',
          folder_path: null,
          team_access: 'none',
          created_by: 'test',
          job_id: null,
          partner,
        },
        now: new Date().toISOString(),
      },
      { newId: randomUUID, metadata: { partition_key: projectId } },
    );
    await waitFor(() => h.read.get(PROJECTS, projectId), { what: `project ${projectId} projected` });
    return projectId;
  }

  async function published(o: { accessLevel: AccessLevel; project?: string; audio?: boolean; title?: string }): Promise<Published> {
    const mediaType = o.audio ? 'Audio' : 'Video';
    const p = await startPublish(h, {
      projectId: o.project ?? projects.plain,
      driveId: drive.id,
      mediaType,
      accessLevel: o.accessLevel,
      publisher: { user_id: drive.publisher.userId, first_name: 'Ada', last_name: 'Lovelace' },
    });
    const seconds = o.audio ? 3 : 4;
    const file = o.audio ? files.audio : files.video;
    await finishPublish(h, p, { file, mediaType, title: o.title ?? HOSTILE_TITLE, seconds, captions: captionsOf(seconds) });
    return p;
  }

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'share-page-'));
    const [video, audio] = await Promise.all([makeRender(dir, 'Video', 4), makeRender(dir, 'Audio', 3)]);
    files = { video, audio };
    h = await startHarness({ processors: false });
    web = supertest(webApp(h, WEB_URL).callback());
    const d = await createDrive(h.admin, { name: 'Publishing drive' });
    const publisher = await createToken(h.admin, { driveId: d.drive_id });
    const colleague = await createToken(h.admin, { driveId: d.drive_id });
    drive = { id: d.drive_id, publisher: { token: publisher.token, userId: publisher.user_id }, colleague: { token: colleague.token } };
    outsider = { token: h.other.token };
    projects = {
      partner: await createProject({ partner_drive_id: PARTNER_DRIVE, source_id: SOURCE_ID }),
      plain: await createProject(null),
    };
    pages.public = await published({ accessLevel: 'public', project: projects.partner });
    pages.unlisted = await published({ accessLevel: 'unlisted' });
    pages.drive = await published({ accessLevel: 'drive' });
    pages.private = await published({ accessLevel: 'private' });
    pages.audio = await published({ accessLevel: 'public', audio: true, title: 'Podcast' });
    pages.processing = await startPublish(h, {
      projectId: projects.plain,
      driveId: drive.id,
      accessLevel: 'public',
      publisher: { user_id: drive.publisher.userId, first_name: 'Ada', last_name: 'Lovelace' },
    });
    pages.failed = await startPublish(h, {
      projectId: projects.plain,
      driveId: drive.id,
      accessLevel: 'public',
      publisher: { user_id: drive.publisher.userId, first_name: 'Ada', last_name: 'Lovelace' },
    });
    await failPublish(h, pages.failed, 'error');
  });
  after(() => h?.close());

  const open = (p: Published, token?: string, path = '') =>
    token ? sessionOf(token).then((cookie) => web.get(`/s/${p.slug}${path}`).set('Cookie', cookie)) : web.get(`/s/${p.slug}${path}`);

  describe('over HTTP', () => {
    it('serves a public video page: player with its captions track, title, duration, escaped Open Graph and Twitter tags, the CSP', async () => {
      const res = await open(pages.public);
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'], /^text\/html/);
      const csp = res.headers['content-security-policy'];
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /media-src 'self'/);
      assert.equal(res.headers['x-robots-tag'], undefined);
      const html = squash(res.text);
      const slug = pages.public.slug;
      assert.match(html, new RegExp(`<video id="player" controls playsinline preload="metadata" src="/s/${slug}/media"`));
      assert.match(html, new RegExp(`<track kind="captions" src="/s/${slug}/captions.vtt" srclang="en" label="English" default />`));
      const escaped = 'Tom&#39;s &quot;cut&quot; &lt;script&gt;alert(1)&lt;/script&gt; &amp; more';
      assert.ok(!html.includes('<script>'), 'no unescaped script');
      assert.ok(html.includes(`<h1>${escaped}</h1>`));
      assert.ok(html.includes('00:00:04'));
      for (const tag of [
        `<meta property="og:title" content="${escaped}" />`,
        '<meta property="og:type" content="video.other" />',
        `<meta property="og:url" content="${WEB_URL}/s/${slug}" />`,
        `<meta property="og:video" content="${WEB_URL}/s/${slug}/media" />`,
        '<meta property="og:video:type" content="video/mp4" />',
        '<meta property="og:description" content="Video · 00:00:04" />',
        '<meta name="twitter:card" content="summary" />',
        `<meta name="twitter:title" content="${escaped}" />`,
      ]) {
        assert.ok(html.includes(tag), `${tag} in\n${html}`);
      }
      assert.ok(!/name="robots"/.test(html), 'a public page may be indexed');
    });

    it('carries the partner round-trip tags for a project that came through a partner link, and none otherwise', async () => {
      const partner = squash((await open(pages.public)).text);
      assert.ok(partner.includes(`<meta property="service:partner" content="${PARTNER_DRIVE}" />`));
      assert.ok(partner.includes(`<meta property="service:source" content="${SOURCE_ID}" />`));
      const plain = (await open(pages.unlisted)).text;
      assert.doesNotMatch(plain, /service:partner|service:source/);
    });

    it('serves an audio page with an <audio> player and og:audio', async () => {
      const html = squash((await open(pages.audio)).text);
      assert.match(html, /<audio id="player" controls preload="metadata" src="\/s\/[^"]+\/media"/);
      assert.ok(!html.includes('<video'));
      assert.ok(html.includes('<meta property="og:type" content="music.song" />'));
      assert.ok(html.includes(`<meta property="og:audio" content="${WEB_URL}/s/${pages.audio.slug}/media" />`));
    });

    it('says noindex for unlisted, drive and private pages, in the page and the header', async () => {
      for (const [p, token] of [
        [pages.unlisted, undefined],
        [pages.drive, drive.colleague.token],
        [pages.private, drive.publisher.token],
      ] as const) {
        const res = await open(p, token);
        assert.equal(res.status, 200);
        assert.ok(res.text.includes('<meta name="robots" content="noindex" />'));
        assert.equal(res.headers['x-robots-tag'], 'noindex');
      }
    });

    it('drive: sends the anonymous to sign in, shows the page to members, a 403 that names nothing to others', async () => {
      const anonymous = await open(pages.drive);
      assert.equal(anonymous.status, 303);
      assert.equal(anonymous.headers.location, `/login?next=${encodeURIComponent(`/s/${pages.drive.slug}`)}`);
      assert.equal((await open(pages.drive, drive.publisher.token)).status, 200);
      assert.equal((await open(pages.drive, drive.colleague.token)).status, 200);
      await refusedWithoutLeak(await open(pages.drive, outsider.token));
    });

    it("private: only the publisher's sign-in sees it", async () => {
      assert.equal((await open(pages.private)).status, 303);
      assert.equal((await open(pages.private, drive.publisher.token)).status, 200);
      await refusedWithoutLeak(await open(pages.private, drive.colleague.token));
      await refusedWithoutLeak(await open(pages.private, outsider.token));
    });

    it('refuses the media and captions of a page exactly as the page, with no redirect', async () => {
      for (const path of ['/media', '/captions.vtt']) {
        assert.equal((await open(pages.drive, undefined, path)).status, 403, path);
        assert.equal((await open(pages.drive, outsider.token, path)).status, 403, path);
        assert.equal((await open(pages.private, drive.colleague.token, path)).status, 403, path);
        assert.equal((await open(pages.drive, drive.colleague.token, path)).status === 200, true, path);
      }
    });

    it('serves the render inline with byte ranges, and the captions as text/vtt', async () => {
      const whole = readFileSync(files.video);
      const res = await web.get(`/s/${pages.unlisted.slug}/media`).set('Range', 'bytes=100-199').buffer(true).parse(binary);
      assert.equal(res.status, 206);
      assert.equal(res.headers['content-type'], 'video/mp4');
      assert.equal(res.headers['content-range'], `bytes 100-199/${whole.length}`);
      assert.equal(res.headers['accept-ranges'], 'bytes');
      assert.match(res.headers['content-disposition'], /^inline; filename=/);
      assert.deepEqual(res.body, whole.subarray(100, 200));
      const vtt = await open(pages.unlisted, undefined, '/captions.vtt');
      assert.equal(vtt.status, 200);
      assert.equal(vtt.headers['content-type'], 'text/vtt; charset=utf-8');
      assert.equal(vtt.text, captionsOf(4));
    });

    it('says a publication is being published (no player, refreshes) or that publishing failed', async () => {
      const processing = await open(pages.processing);
      assert.equal(processing.status, 200);
      assert.match(processing.text, /Being published/);
      assert.match(processing.text, /<meta http-equiv="refresh" content="5" \/>/);
      assert.doesNotMatch(processing.text, /<video|<audio/);
      assert.equal((await open(pages.processing, undefined, '/media')).status, 404);
      const failed = await open(pages.failed);
      assert.match(failed.text, /Publishing failed/);
      assert.doesNotMatch(failed.text, /<video|<audio|http-equiv/);
    });

    it('answers 404 pages for unknown and malformed slugs', async () => {
      for (const slug of [randomBytes(12).toString('base64url'), 'nope', '%3Cscript%3E', 'A'.repeat(40)]) {
        for (const path of ['', '/media', '/captions.vtt']) {
          const res = await web.get(`/s/${slug}${path}`);
          assert.equal(res.status, 404, `${slug}${path}`);
          assert.match(res.headers['content-type'], /^text\/html/);
        }
      }
    });
  });

  describe('in headless Chromium', () => {
    let browser: Browser;
    let site: Awaited<ReturnType<typeof listenFirst>>;
    before(async function () {
      skipWithoutChromium(this);
      site = await listenFirst();
      site.handle(webApp(h, site.base).callback());
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      site?.server.closeAllConnections();
      site?.server.close();
    });

    /** A page in a context of its own: signed in with `token`'s session, or anonymous. */
    async function visit(
      p: Published,
      token?: string,
    ): Promise<{ page: Page; context: BrowserContext; status: number | undefined; violations: string[] }> {
      const context = await browser.newContext();
      if (token) {
        const [name, value] = (await sessionOf(token)).split('=');
        await context.addCookies([{ name, value, url: site.base }]);
      }
      const page = await context.newPage();
      const violations: string[] = [];
      page.on('console', (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
      const response = await page.goto(`${site.base}/s/${p.slug}`);
      return { page, context, status: response?.status(), violations };
    }

    /**
     * Plays the page's player: metadata loads, time advances, and its captions track has cues.
     * Playwright sends each function's text to the browser: they use only their argument.
     */
    async function plays(page: Page, tag: 'video' | 'audio'): Promise<void> {
      const el = (await page.$(tag))!;
      assert.ok(el, `a <${tag}> on the page`);
      await page.waitForFunction((m) => (m as unknown as MediaLike).readyState >= 1, el, { timeout: 20_000 });
      const duration = await el.evaluate((m) => (m as unknown as MediaLike).duration);
      assert.ok(Math.abs(duration - (tag === 'video' ? 4 : 3)) < 0.2, `duration ${duration}`);
      await el.evaluate(async (m) => {
        const media = m as unknown as MediaLike;
        media.muted = true;
        await media.play();
      });
      await page.waitForFunction((m) => (m as unknown as MediaLike).currentTime > 0.5, el, { timeout: 20_000 });
      await el.evaluate((m) => {
        (m as unknown as MediaLike).textTracks[0].mode = 'showing';
      });
      await page.waitForFunction((m) => ((m as unknown as MediaLike).textTracks[0].cues?.length ?? 0) > 0, el, { timeout: 20_000 });
      const track = await el.evaluate((m) => {
        const t = (m as unknown as MediaLike).textTracks[0];
        return { kind: t.kind, language: t.language, cues: t.cues!.length, first: t.cues![0].text };
      });
      assert.deepEqual(track, { kind: 'captions', language: 'en', cues: tag === 'video' ? 4 : 3, first: 'Line 1 <b>&amp;</b>' });
    }

    it('plays a public video with its captions, shows title and duration, with no CSP violation; a screenshot is kept', async () => {
      const { page, context, status, violations } = await visit(pages.public);
      try {
        assert.equal(status, 200);
        assert.equal(await page.textContent('h1'), HOSTILE_TITLE);
        assert.equal(await page.textContent('#duration'), '00:00:04');
        assert.equal(await page.getAttribute('meta[property="service:partner"]', 'content'), PARTNER_DRIVE);
        assert.equal(await page.getAttribute('meta[property="service:source"]', 'content'), SOURCE_ID);
        assert.equal(await page.getAttribute('meta[property="og:title"]', 'content'), HOSTILE_TITLE);
        assert.equal(await page.$('meta[name="robots"]'), null);
        await plays(page, 'video');
        const video = (await page.$('video'))!;
        await video.evaluate((m) => {
          const v = m as unknown as MediaLike;
          v.pause();
          v.currentTime = 1.5;
        });
        await page.waitForFunction((m) => (m as unknown as MediaLike).readyState >= 2 && !(m as unknown as MediaLike).seeking, video);
        mkdirSync('test-results', { recursive: true });
        await page.screenshot({ path: 'test-results/share-page.png', fullPage: true });
        assert.ok(statSync('test-results/share-page.png').size > 1000);
        assert.deepEqual(violations, []);
      } finally {
        await context.close();
      }
    });

    it('plays an audio page with its captions', async () => {
      const { page, context, status } = await visit(pages.audio);
      try {
        assert.equal(status, 200);
        await plays(page, 'audio');
      } finally {
        await context.close();
      }
    });

    it('unlisted: plays for anyone with the link, and says noindex', async () => {
      const { page, context, status } = await visit(pages.unlisted);
      try {
        assert.equal(status, 200);
        assert.equal(await page.getAttribute('meta[name="robots"]', 'content'), 'noindex');
        assert.equal(await page.$('meta[property="service:partner"]'), null);
        await plays(page, 'video');
      } finally {
        await context.close();
      }
    });

    it("drive: anonymous goes through sign-in and comes back to a playing page; another drive's member gets a 403 page", async () => {
      const anonymous = await visit(pages.drive);
      try {
        assert.equal(anonymous.page.url(), `${site.base}/login?next=${encodeURIComponent(`/s/${pages.drive.slug}`)}`);
        await anonymous.page.fill('input[name=token]', drive.colleague.token);
        await Promise.all([anonymous.page.waitForURL(`${site.base}/s/${pages.drive.slug}`), anonymous.page.click('button[type=submit]')]);
        await plays(anonymous.page, 'video');
      } finally {
        await anonymous.context.close();
      }
      const stranger = await visit(pages.drive, outsider.token);
      try {
        assert.equal(stranger.status, 403);
        assert.equal(await stranger.page.$('video'), null);
        assert.ok(!(await stranger.page.content()).includes('Tom'), 'the refusal names nothing of the publication');
      } finally {
        await stranger.context.close();
      }
    });

    it('private: plays for the publisher, a 403 page for a colleague and for another drive, sign-in for the anonymous', async () => {
      const own = await visit(pages.private, drive.publisher.token);
      try {
        assert.equal(own.status, 200);
        await plays(own.page, 'video');
      } finally {
        await own.context.close();
      }
      for (const token of [drive.colleague.token, outsider.token]) {
        const other = await visit(pages.private, token);
        try {
          assert.equal(other.status, 403);
          assert.equal(await other.page.$('video'), null);
          assert.ok(!(await other.page.content()).includes('Tom'));
        } finally {
          await other.context.close();
        }
      }
      const anonymous = await visit(pages.private);
      try {
        assert.match(anonymous.page.url(), /\/login\?next=/);
      } finally {
        await anonymous.context.close();
      }
    });
  });
});

/** What the tests read of a page's player (this project compiles without the DOM's types). */
type MediaLike = {
  readyState: number;
  duration: number;
  currentTime: number;
  seeking: boolean;
  muted: boolean;
  play(): Promise<void>;
  pause(): void;
  textTracks: { kind: string; language: string; mode: string; cues: { length: number; [i: number]: { text: string } } | null }[];
};

async function refusedWithoutLeak(res: supertest.Response): Promise<void> {
  assert.equal(res.status, 403);
  assert.match(res.headers['content-type'], /^text\/html/);
  assert.doesNotMatch(res.text, /Tom|cut|Lovelace|og:|<video|<audio/);
}

function binary(res: supertest.Response, done: (err: Error | null, body: Buffer) => void) {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}
