import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { startHarness, type Harness } from '../fixtures/harness';
import { launchChromium, listenFirst, skipWithoutChromium } from '../fixtures/browser';
import { checkedAgainstDocument } from '../fixtures/openapi-drift';

describe('API description: GET /v1/openapi.json and the /docs page', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ processors: false });
  });
  after(async () => h.close());

  it('serves the OpenAPI 3.1 document with no token, cacheable by its ETag', async () => {
    const res = await h.http.get('/v1/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'], /^application\/json/);
    assert.equal(res.body.openapi, '3.1.0');
    assert.ok(res.body.paths['/jobs/{job_id}'].get);
    const etag = res.headers.etag as string;
    assert.ok(etag);
    const again = await h.http.get('/v1/openapi.json').set('If-None-Match', etag);
    assert.equal(again.status, 304);
    const other = await h.http.get('/v1/openapi.json').set('If-None-Match', '"something-else"');
    assert.equal(other.status, 200);
  });

  it('keeps the token guard on the rest of /v1', async () => {
    const res = await h.http.get('/v1/status');
    assert.equal(res.status, 401);
  });

  it('serves the page and its files under a CSP with no inline script', async () => {
    const page = await h.http.get('/docs');
    assert.equal(page.status, 200);
    const csp = page.headers['content-security-policy'] as string;
    assert.match(csp, /script-src 'self';/);
    assert.doesNotMatch(csp, /unsafe-eval|script-src[^;]*unsafe-inline/);
    assert.doesNotMatch(page.text, /<script>[^<]/);
    const bundle = await h.http.get('/docs/swagger-ui-bundle.js');
    assert.equal(bundle.status, 200);
    assert.match(bundle.headers['content-type'], /javascript/);
    assert.equal((await h.http.get('/docs/nothing-here.js')).status, 404);
  });

  it("records the answers the document does not describe: the request, the status, the schema's complaint", async () => {
    const { server, base, handle } = await listenFirst();
    const answers: Record<string, [number, unknown]> = {
      '/v1/status': [200, { drive_id: 'not-a-uuid', drive_name: 'x', api_version: '1.2' }],
      '/v1/jobs': [418, { error: 'teapot', message: 'no' }],
      '/v1/agent/models': [200, { availableModels: [{ id: 'auto', cost: 'medium' }], aliases: [] }],
      '/v1/nothing/here': [200, {}],
    };
    const drift = checkedAgainstDocument((req, res) => {
      const [status, body] = answers[req.url ?? ''] ?? [404, { error: 'not_found', message: 'no route' }];
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.write(JSON.stringify(body).slice(0, 5));
      res.end(JSON.stringify(body).slice(5));
    });
    handle(drift.listener);
    try {
      for (const path of [...Object.keys(answers), '/v1/unknown']) await fetch(base + path).then((r) => r.arrayBuffer());
    } finally {
      server.close();
    }
    assert.equal(drift.violations.length, 3, drift.violations.join('\n'));
    assert.match(
      drift.violations[0],
      /^GET \/status 200: the body does not match #\/components\/schemas\/status: \/drive_id must match format "uuid"/,
    );
    assert.match(drift.violations[1], /^GET \/jobs answered 418, which is not documented/);
    assert.match(drift.violations[2], /^GET \/v1\/nothing\/here: no operation documents it/);
  });

  describe('in a browser', () => {
    let browser: Browser;
    let base: string;
    before(async function () {
      skipWithoutChromium(this);
      await new Promise<void>((resolve) => h.server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(h.server.address() as AddressInfo).port}`;
      browser = await launchChromium();
    });
    after(async () => browser?.close());

    it('renders every operation with Swagger UI, with no CSP violation and nothing from another origin', async () => {
      const page = await browser.newPage();
      const problems: string[] = [];
      const foreign: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('request', (r) => {
        if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url());
      });
      await page.goto(`${base}/docs`);
      const doc = (await h.http.get('/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
      const operations = Object.values(doc.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
      await page
        .locator('.opblock')
        .nth(operations - 1)
        .waitFor({ timeout: 30_000 });
      assert.equal(await page.locator('.opblock').count(), operations);
      assert.match((await page.textContent('.info .title')) ?? '', /Media Project Service API/);
      assert.deepEqual(problems, []);
      assert.deepEqual(foreign, []);
      await page.close();
    });
  });
});
