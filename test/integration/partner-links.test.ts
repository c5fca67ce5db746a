import assert from 'node:assert/strict';
import { createReadStream, mkdirSync, mkdtempSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import { literalRefusal, parseAllowlist } from '../../lib/adapters/http/outbound-fetcher';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createDrive, updateDrive } from '../../lib/app/admin';
import { createBalances } from '../../lib/app/balances';
import { handleCommand } from '../../lib/app/command-handler';
import { streams } from '../../lib/domain/ids';
import { IMPORT_LINK_TTL_MS, importLinkDecider, type ImportLinkUsed } from '../../lib/domain/import-link';
import type { ProjectCreated } from '../../lib/domain/project';
import { readProject } from '../../lib/read-models/projects';
import { startHarness, WEB_URL, type Harness } from '../fixtures/harness';
import { makeTestMedia } from '../fixtures/media';
import { waitFor } from '../fixtures/wait';
import { launchChromium, listenFirst, skipWithoutChromium } from '../fixtures/browser';
import { webAppOn } from '../fixtures/web-app';

/**
 * Partner import links end to end: a partner drive asks for a link (POST /v1/edit_in_descript/
 * schema), a member of another drive opens it, signs in, imports, and lands on the new project.
 * Files come from a loopback server that records each request's User-Agent and can answer 404 a
 * few times before serving a file (storage that is not yet consistent).
 */

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** `/file/<name>` serves; `/flaky/<name>` answers 404 twice per name, then serves; anything else is 404. */
async function startFileServer(files: Record<string, string>) {
  const requests: { path: string; userAgent: string | undefined }[] = [];
  const misses = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    requests.push({ path, userAgent: req.headers['user-agent'] });
    const [, kind, raw] = path.split('/');
    const name = decodeURIComponent(raw ?? '');
    const file = Object.hasOwn(files, name) ? files[name] : undefined;
    const missed = misses.get(path) ?? 0;
    if (kind === 'flaky' && missed < 2) misses.set(path, missed + 1);
    if (!file || (kind !== 'file' && kind !== 'flaky') || (kind === 'flaky' && missed < 2)) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (kind: 'file' | 'flaky', name: string) => `${base}/${kind}/${encodeURIComponent(name)}`,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const squash = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .replace(/ (?=[<>])/g, '')
    .replace(/> (?=<)/g, '>');

describe('partner import links (edit in)', function () {
  this.timeout(120_000);
  let h: Harness;
  let files: Awaited<ReturnType<typeof startFileServer>>;
  let partner: Awaited<ReturnType<typeof createDrive>>;
  let sourceSeq = 0;

  const issue = (body: Record<string, unknown>, token = partner.token) =>
    h.http.post('/v1/edit_in_descript/schema').set(h.auth(token)).send(body);
  /** A schema of `list` with a fresh source id, as the spec nests it. */
  const schema = (list: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
    partner_drive_id: partner.drive_id,
    project_schema: { schema_version: '1.0.0', files: list, source_id: `source-${++sourceSeq}`, ...extra },
  });
  const issueLink = async (list: Record<string, unknown>[], extra: Record<string, unknown> = {}) => {
    const body = schema(list, extra);
    const res = await issue(body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const nonce = new URL(res.body.url).searchParams.get('nonce')!;
    return { nonce, sourceId: body.project_schema.source_id as string, res };
  };
  /** The session cookie of a sign-in with `token`, one per token. */
  const sessions = new Map<string, Promise<string>>();
  const sessionOf = (token: string) => sessions.get(token) ?? sessions.set(token, h.signIn(token)).get(token)!;
  const postImport = async (nonce: string, token = h.drive.token) =>
    h.http
      .post('/import')
      .set('Origin', WEB_URL)
      .set('Cookie', await sessionOf(token))
      .type('form')
      .send({ nonce });
  const linkUse = async (nonce: string) =>
    (await h.store.readStream(streams.importLink(nonce)))
      .filter((e) => e.type === 'ImportLinkUsed')
      .map((e) => e.data as ImportLinkUsed['data']);
  /** Projects created from a partner source, straight from the store (the read model may lag). */
  const projectsFrom = async (sourceId: string) => {
    const found: ProjectCreated['data'][] = [];
    for (let after: string | null = null; ;) {
      const page = await h.store.readAll(after, 500);
      if (page.length === 0) return found;
      for (const e of page) {
        const data = e.data as ProjectCreated['data'];
        if (e.type === 'ProjectCreated' && data.partner?.source_id === sourceId) found.push(data);
      }
      after = page[page.length - 1].position;
    }
  };
  const projectDoc = (projectId: string, media: number) =>
    waitFor(
      async () => {
        const doc = await readProject(h.read, projectId);
        return doc && doc.media.length >= media ? doc : null;
      },
      { timeoutMs: 30_000, what: `project ${projectId} with ${media} media in the read model` },
    );

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'partner-links-'));
    const [voice, clip] = await Promise.all([makeTestMedia(dir, 'wav', 2), makeTestMedia(dir, 'mp4', 1)]);
    files = await startFileServer({ 'voice.wav': voice, 'clip.mp4': clip, 'late.wav': voice });
    // Admission control at 20 unfinished jobs per drive: only the test of a full backlog reaches it.
    h = await startHarness({ admission: { limit: 20 } });
    partner = await createDrive(h.admin, { name: 'Partner', partner: true });
    await updateDrive(h.admin, partner.drive_id, { host_allow_list: ['127.0.0.1', 'Media.Example', '10.0.0.5'] });
  });
  after(async () => {
    await h?.close();
    await files?.close();
  });

  describe('POST /v1/edit_in_descript/schema', () => {
    it('answers 201 with a new link under WEB_URL for every request', async () => {
      const list = [{ uri: files.url('file', 'voice.wav') }];
      const [a, b] = [await issueLink(list), await issueLink(list)];
      assert.match(a.res.body.url, new RegExp(`^${WEB_URL}/import\\?nonce=${UUID}$`));
      assert.notEqual(a.nonce, b.nonce, 'each request makes a new link');
      const expires = Date.parse(a.res.body.expires_at) - Date.now();
      assert.ok(expires > IMPORT_LINK_TTL_MS - 60_000 && expires <= IMPORT_LINK_TTL_MS, `valid for 3 hours: ${a.res.body.expires_at}`);
      const [issued] = await h.store.readStream(streams.importLink(a.nonce));
      assert.equal(issued.type, 'ImportLinkIssued');
      assert.deepEqual(issued.data.files, [{ uri: list[0].uri, name: null, start_offset: null }]);
      assert.equal(issued.data.drive_id, partner.drive_id);
    });

    it('refuses a drive without partner access with 403', async () => {
      const res = await issue({ ...schema([{ uri: files.url('file', 'voice.wav') }]), partner_drive_id: h.drive.drive_id }, h.drive.token);
      assert.equal(res.status, 403);
      assert.equal(res.body.error, 'forbidden');
      assert.match(res.body.message, /partner access/);
    });

    it("refuses a partner_drive_id that is not the token's drive with 403", async () => {
      const res = await issue({ ...schema([{ uri: files.url('file', 'voice.wav') }]), partner_drive_id: h.drive.drive_id });
      assert.equal(res.status, 403);
      assert.match(res.body.message, /partner_drive_id .* is not the drive of this API token/);
    });

    it('refuses a host that is not on the allow list, naming the URI; hosts match exactly, without case', async () => {
      const list = [
        { uri: files.url('file', 'voice.wav') },
        { uri: 'https://MEDIA.example/ok.wav' },
        { uri: 'https://evil.example/x.wav' },
      ];
      const res = await issue(schema(list));
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, /^project_schema\.files\[2\]\.uri: the host evil\.example is not on this drive's host allow list/);
      const sub = await issue(schema([{ uri: 'https://cdn.media.example/a.wav' }]));
      assert.equal(sub.status, 400, 'a subdomain of an allowed host is not allowed');
      assert.match(sub.body.message, /files\[0\]\.uri/);
      assert.equal((await issue(schema(list.slice(0, 2)))).status, 201, 'MEDIA.example matches Media.Example');
    });

    it('refuses an internal address even when its host is on the allow list', async () => {
      const res = await issue(schema([{ uri: 'http://10.0.0.5/a.wav' }]));
      assert.equal(res.status, 400);
      assert.match(res.body.message, /^project_schema\.files\[0\]\.uri: refused: /);
    });

    it('checks the schema: version 1.0.0, 1 to 100 files, http(s) URIs, offsets of 0 or more', async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [
          { ...schema([{ uri: files.url('file', 'voice.wav') }]), project_schema: { schema_version: '2.0.0', files: [] } },
          /schema_version/,
        ],
        [schema([]), /files/],
        [schema(Array.from({ length: 101 }, () => ({ uri: files.url('file', 'voice.wav') }))), /files/],
        [schema([{ uri: 'ftp://127.0.0.1/a.wav' }]), /files\[0\]\.uri/],
        [schema([{ uri: files.url('file', 'voice.wav'), start_offset: { seconds: -1 } }]), /start_offset\.seconds/],
        [{ project_schema: schema([{ uri: files.url('file', 'voice.wav') }]).project_schema }, /partner_drive_id is required/],
      ];
      for (const [body, message] of cases) {
        const res = await issue(body);
        assert.equal(res.status, 400, JSON.stringify(body).slice(0, 200));
        assert.match(res.body.message, message);
      }
    });
  });

  describe('the import page', () => {
    it('sends a visitor without a session to sign in, then back to the link', async () => {
      const { nonce } = await issueLink([{ uri: files.url('file', 'voice.wav') }]);
      const res = await h.http.get(`/import?nonce=${nonce}`);
      assert.equal(res.status, 303);
      assert.equal(res.headers.location, `/login?next=${encodeURIComponent(`/import?nonce=${nonce}`)}`);
      const login = await h.http
        .post('/login')
        .type('form')
        .send({ token: h.drive.token, next: `/import?nonce=${nonce}` });
      assert.equal(login.headers.location, `/import?nonce=${nonce}`);
      const post = await h.http.post('/import').type('form').send({ nonce });
      assert.equal(post.status, 303, 'an Import posted after the session ended goes to sign in, then to the page');
      assert.equal(post.headers.location, res.headers.location);
      assert.deepEqual(await linkUse(nonce), []);
    });

    it('shows an issued link: file names, hosts, start offsets and the Import form', async () => {
      const { nonce } = await issueLink([
        { uri: files.url('file', 'voice.wav'), name: '<b>Host</b>.wav', start_offset: { seconds: 0 } },
        { uri: 'https://media.example/show/guest%20track.wav?X-Sig=1', start_offset: { seconds: 1.5 } },
      ]);
      const res = await h.http.get(`/import?nonce=${nonce}`).set('Cookie', await sessionOf(h.drive.token));
      assert.equal(res.status, 200, res.text);
      const page = squash(res.text);
      assert.ok(page.includes('<td>&lt;b&gt;Host&lt;/b&gt;.wav</td><td>127.0.0.1:'), page);
      assert.ok(page.includes('<td>guest track.wav</td><td>media.example</td><td>0:01.5</td>'), page);
      assert.ok(page.includes(`<form method="post" action="/import"><input type="hidden" name="nonce" value="${nonce}" />`), page);
      assert.match(page, /your drive<strong>Test drive<\/strong>/);
      assert.doesNotMatch(res.text, /X-Sig/, 'a pre-signed query is not shown');
    });

    it('answers an unknown or malformed nonce with a 404 page', async () => {
      for (const nonce of ['6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f', 'not-a-nonce', '']) {
        const res = await h.http.get(`/import?nonce=${nonce}`).set('Cookie', await sessionOf(h.drive.token));
        assert.equal(res.status, 404, nonce);
        assert.match(res.text, /There is no import link at this address/);
        assert.equal((await postImport(nonce)).status, 404, nonce);
      }
    });

    it("refuses an Import form posted from another site's page", async () => {
      const { nonce } = await issueLink([{ uri: files.url('file', 'voice.wav') }]);
      const res = await h.http
        .post('/import')
        .set('Origin', 'https://evil.example')
        .set('Cookie', await sessionOf(h.drive.token))
        .type('form')
        .send({ nonce });
      assert.equal(res.status, 403);
      assert.deepEqual(await linkUse(nonce), [], 'the link is not spent');
    });
  });

  describe('importing', () => {
    let imported: { nonce: string; sourceId: string; projectId: string; jobId: string };

    it("imports into the signed-in user's drive and goes to the new project; files are fetched as Servicebot/1.0", async () => {
      const { nonce, sourceId } = await issueLink([
        { uri: files.url('file', 'voice.wav') },
        { uri: files.url('file', 'clip.mp4'), name: 'Camera' },
      ]);
      const res = await postImport(nonce);
      assert.equal(res.status, 303, res.text);
      const location = String(res.headers.location);
      // The job's project_url: the project, and the composition the import makes.
      const [, projectId] = new RegExp(`^${WEB_URL}/(${UUID})/[0-9a-f]{5}$`).exec(location) ?? assert.fail(location);
      const [use] = await linkUse(nonce);
      assert.equal(use.project_id, projectId);
      assert.equal(use.used_by_drive, h.drive.drive_id);
      imported = { nonce, sourceId, projectId, jobId: use.job_id };

      const job = await h.waitForJob(use.job_id, undefined, 30_000);
      assert.equal(job.drive_id, h.drive.drive_id);
      assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
      assert.deepEqual(Object.keys((job.result as any).media_status).sort(), ['Camera', 'voice.wav']);
      const fetched = files.requests.filter((r) => r.path === '/file/voice.wav' || r.path === '/file/clip.mp4');
      assert.ok(fetched.length >= 2);
      for (const r of fetched) assert.equal(r.userAgent, 'Servicebot/1.0');

      const doc = await projectDoc(projectId, 2);
      assert.equal(doc.name, 'voice');
      assert.equal(doc.drive_id, h.drive.drive_id);
      assert.deepEqual(doc.partner, { partner_drive_id: partner.drive_id, source_id: sourceId });
      const detail = await h.http.get(`/v1/projects/${projectId}`).set(h.auth());
      assert.equal(detail.status, 200);
      assert.deepEqual(
        detail.body.compositions.map((c: { name: string }) => c.name),
        ['voice', 'voice'],
        'the placeholder, then the composition playing the files',
      );
    });

    it('answers a used link with 410 on the page and the form, importing nothing more and showing no project', async () => {
      for (const token of [h.drive.token, h.other.token]) {
        const page = await h.http.get(`/import?nonce=${imported.nonce}`).set('Cookie', await sessionOf(token));
        assert.equal(page.status, 410);
        assert.match(page.text, /already used/);
        assert.doesNotMatch(page.text, new RegExp(imported.projectId));
        const post = await postImport(imported.nonce, token);
        assert.equal(post.status, 410);
        assert.equal(post.headers.location, undefined);
        assert.doesNotMatch(post.text, new RegExp(imported.projectId));
      }
      assert.equal((await linkUse(imported.nonce)).length, 1);
      assert.equal((await projectsFrom(imported.sourceId)).length, 1, 'no second project');
    });

    it('uses a link once when two imports are posted at the same moment', async () => {
      const { nonce, sourceId } = await issueLink([{ uri: files.url('file', 'voice.wav') }]);
      const answers = await Promise.all([postImport(nonce), postImport(nonce, h.other.token), postImport(nonce)]);
      assert.deepEqual(answers.map((a) => a.status).sort(), [303, 410, 410]);
      assert.equal((await linkUse(nonce)).length, 1);
      const projects = await projectsFrom(sourceId);
      assert.equal(projects.length, 1);
      assert.match(
        answers.find((a) => a.status === 303)!.headers.location,
        new RegExp(`^${WEB_URL}/${projects[0].project_id}/[0-9a-f]{5}$`),
      );
    });

    it('answers an expired link with 410 and imports nothing', async () => {
      const nonce = randomIds.uuid();
      const fourHoursAgo = new Date(Date.now() - 4 * 3600 * 1000).toISOString();
      const link = { nonce, drive_id: partner.drive_id, partner_drive_id: partner.drive_id, source_id: 'expired-source' };
      await handleCommand(
        h.store,
        streams.importLink(nonce),
        importLinkDecider,
        {
          type: 'IssueImportLink',
          link: { ...link, files: [{ uri: files.url('file', 'voice.wav'), name: null, start_offset: null }] },
          validForMs: IMPORT_LINK_TTL_MS,
          now: fourHoursAgo,
        },
        { newId: randomIds.uuidv7, metadata: { partition_key: nonce } },
      );
      const page = await h.http.get(`/import?nonce=${nonce}`).set('Cookie', await sessionOf(h.drive.token));
      assert.equal(page.status, 410);
      assert.match(page.text, /expired/);
      const post = await postImport(nonce);
      assert.equal(post.status, 410);
      assert.match(post.text, /expired/);
      assert.deepEqual(await linkUse(nonce), []);
      assert.deepEqual(await projectsFrom('expired-source'), []);
    });

    it('leaves the link usable when the import is refused (a drive with no media seconds left)', async () => {
      const broke = await createDrive(h.admin, { name: 'Broke', mediaSeconds: 0 });
      const { nonce } = await issueLink([{ uri: files.url('file', 'voice.wav') }]);
      const res = await postImport(nonce, broke.token);
      assert.equal(res.status, 402);
      assert.match(res.text, /no media seconds left/);
      assert.deepEqual(await linkUse(nonce), []);
      assert.equal((await postImport(nonce)).status, 303, 'another user can still use it');
    });

    it('answers a drive with a full backlog with a 429 page and Retry-After, leaving the link usable', async () => {
      const busy = await createDrive(h.admin, { name: 'Busy' });
      // Twenty imports waiting for their uploads: queued until their upload URLs expire.
      for (let i = 0; i < 20; i++) {
        const res = await h.http
          .post('/v1/jobs/import/project_media')
          .set(h.auth(busy.token))
          .send({ project_name: `Waiting ${i}`, add_media: { 'a.wav': { content_type: 'audio/wav', file_size: 1000 } } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
      }
      const { nonce } = await issueLink([{ uri: files.url('file', 'voice.wav') }]);
      const res = await postImport(nonce, busy.token);
      assert.equal(res.status, 429);
      assert.equal(res.headers['retry-after'], '5');
      assert.match(res.text, /20 jobs queued or running/);
      assert.deepEqual(await linkUse(nonce), []);
      assert.equal((await postImport(nonce)).status, 303, 'another user can still use it');
    });

    it('retries a file the storage does not serve yet (404 twice), then imports it', async () => {
      const { nonce } = await issueLink([{ uri: files.url('flaky', 'late.wav') }]);
      assert.equal((await postImport(nonce)).status, 303);
      const [use] = await linkUse(nonce);
      const job = await h.waitForJob(use.job_id, undefined, 30_000);
      assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
      const tries = files.requests.filter((r) => r.path === '/flaky/late.wav');
      assert.equal(tries.length, 3, 'two 404s, then the file');
      assert.ok(tries.every((r) => r.userAgent === 'Servicebot/1.0'));
    });

    it('makes files with start offsets the tracks of a multitrack sequence, and a composition playing it', async () => {
      const { nonce } = await issueLink([
        { uri: files.url('file', 'voice.wav'), name: 'host.wav' },
        { uri: files.url('file', 'clip.mp4'), name: 'guest.mp4', start_offset: { seconds: 1.5 } },
      ]);
      assert.equal((await postImport(nonce)).status, 303);
      const [use] = await linkUse(nonce);
      const job = await h.waitForJob(use.job_id, undefined, 30_000);
      assert.equal((job.result as any).status, 'success', JSON.stringify(job.result));
      const doc = await projectDoc(use.project_id, 3);
      const sequence = doc.media.find((m) => m.ref === 'Multitrack');
      assert.equal(sequence?.type, 'sequence');
      assert.deepEqual(sequence?.tracks, [
        { media: 'host.wav', offset: 0 },
        { media: 'guest.mp4', offset: 1.5 },
      ]);
      assert.ok(Math.abs((sequence?.duration ?? 0) - 2.5) < 0.2, `1.5 s offset + 1 s clip: ${sequence?.duration}`);
      const detail = await h.http.get(`/v1/projects/${use.project_id}`).set(h.auth());
      const composition = detail.body.compositions.find((c: { name: string; duration: number }) => c.duration > 0);
      assert.equal(composition.name, 'host');
      assert.ok(Math.abs(composition.duration - 2.5) < 0.2, JSON.stringify(detail.body.compositions));
      assert.equal(composition.media_type, 'video');
    });
  });

  it('walks through sign-in and Import in headless Chromium, landing on the new project with its media', async function () {
    skipWithoutChromium(this);
    const site = await listenFirst();
    const browser = await launchChromium();
    try {
      const { base } = site;
      site.handle(webApp(h, base).callback());

      const { nonce } = await issueLink([{ uri: files.url('file', 'voice.wav'), name: 'Browser take.wav' }]);
      const page = await browser.newPage();
      const violations: string[] = [];
      page.on('console', (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
      await page.goto(`${base}/import?nonce=${nonce}`);
      assert.match(page.url(), /\/login\?next=/);
      await page.fill('input[name=token]', h.drive.token);
      await Promise.all([page.waitForURL(`${base}/import?nonce=${nonce}`, { timeout: 10_000 }), page.click('button[type=submit]')]);
      assert.ok((await page.innerText('body')).includes('Browser take.wav'));

      await Promise.all([
        page.waitForURL(new RegExp(`^${base}/${UUID}/[0-9a-f]{5}$`), { timeout: 10_000 }),
        page.click('button:has-text("Import")'),
      ]);
      const projectId = page
        .url()
        .slice(base.length + 1)
        .split('/')[0];
      // The page reads the read models: reload until the import has landed there.
      await waitFor(
        async () => {
          await page.reload();
          const text = await page.innerText('body');
          return text.includes('Browser take.wav') && /0:02\.0/.test(text) && text.includes('success');
        },
        { timeoutMs: 30_000, intervalMs: 250, what: 'the imported media on the project page' },
      );
      assert.equal(await page.textContent('h1'), 'Browser take');
      assert.deepEqual(violations, []);
      mkdirSync('test-results', { recursive: true });
      await page.screenshot({ path: 'test-results/partner-import.png', fullPage: true });

      await page.goto(`${base}/import?nonce=${nonce}`);
      assert.equal(await page.textContent('h1'), 'Gone');
      assert.ok(!(await page.innerText('body')).includes(projectId));
    } finally {
      await browser.close();
      site.server.closeAllConnections();
      site.server.close();
    }
  });
});

/** The web pages with partner imports, WEB_URL `webUrl`. */
function webApp(h: Harness, webUrl: string): Koa {
  const allowlist = parseAllowlist(['127.0.0.1']);
  const imports = {
    store: h.store,
    clock: systemClock,
    ids: randomIds,
    webUrl,
    urlRefusal: (url: string) => literalRefusal(url, allowlist),
    balance: createBalances({ store: h.store, clock: systemClock, ids: randomIds }),
  };
  return webAppOn(h, webUrl, { more: { imports } });
}
