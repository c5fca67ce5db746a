import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { routeByMethod } from '../../lib/http/gateway';
import { OPERATIONS } from '../../lib/http/openapi-operations';
import { findNginx, startGateway, type Gateway } from '../fixtures/nginx';
import { makeTestMedia } from '../fixtures/media';
import { admin, buildOnce, freePort, startService, type ServiceProcess } from '../fixtures/service-process';
import { openSse } from '../fixtures/sse';

/**
 * The distributed deployment's gateway (deploy/gateway/nginx.conf), run by a real nginx. The
 * routing is checked against what `npm start` does in one process (lib/http/gateway.ts
 * `routeByMethod`, which every integration test goes through): every operation of the API
 * document and every page, sent through nginx to two recording backends, must reach the side
 * `routeByMethod` sends it to. Then the behaviour a proxy can break, with the real service behind
 * it: an upload larger than the gateway's JSON limit streamed through, live job events arriving
 * while the job runs (not buffered until it ends), errors nginx makes itself in the API's shape.
 */
describe('e2e: the gateway (deploy/gateway/nginx.conf) under a real nginx', function () {
  this.timeout(120_000);
  let nginx: string;

  before(async function () {
    this.timeout(300_000);
    const found = await findNginx();
    if ('missing' in found) {
      console.log(`      skipped: ${found.missing}`);
      this.skip();
    }
    nginx = found.path;
  });

  describe('routing, against two recording backends', () => {
    type Seen = { backend: 'command' | 'query'; method: string; url: string; requestId: string | undefined; bodyBytes: number };
    let seen: Seen[];
    let command: Server;
    let query: Server;
    let gateway: Gateway;

    const recording = (backend: Seen['backend']) =>
      createServer((req: IncomingMessage, res: ServerResponse) => {
        let bodyBytes = 0;
        req.on('data', (chunk: Buffer) => (bodyBytes += chunk.length));
        req.on('end', () => {
          const entry = {
            backend,
            method: req.method!,
            url: req.url!,
            requestId: req.headers['x-request-id'] as string | undefined,
            bodyBytes,
          };
          seen.push(entry);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(req.method === 'HEAD' ? undefined : JSON.stringify(entry));
        });
      });
    const listen = async (server: Server) => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
      return (server.address() as AddressInfo).port;
    };

    before(async () => {
      seen = [];
      command = recording('command');
      query = recording('query');
      gateway = await startGateway(nginx, { command: await listen(command), query: await listen(query) });
    });
    after(async () => {
      await gateway?.stop();
      command?.close();
      query?.close();
    });

    /** Which side `npm start` sends a request to: routeByMethod with two apps that only say who they are. */
    const sideInProcess = (method: string, url: string): 'command' | 'query' => {
      let side: 'command' | 'query' | null = null;
      const app = (name: 'command' | 'query') => ({ callback: () => () => void (side = name) });
      routeByMethod(app('command'), app('query'))({ method, url } as IncomingMessage, {} as ServerResponse);
      return side!;
    };

    /** Every operation of the API document, its path parameters filled in; and every page and operator endpoint. */
    const requests = (): { method: string; url: string }[] => [
      ...OPERATIONS.map((op) => ({ method: op.method.toUpperCase(), url: `/v1${op.path.replace(/\{[^}]+\}/g, 'p1')}` })),
      ...[
        'GET /',
        'GET /login?next=%2F',
        'POST /login',
        'POST /logout',
        'GET /import?nonce=n1',
        'POST /import',
        'GET /3f2a9c1e-0000-4000-8000-000000000001',
        'GET /3f2a9c1e-0000-4000-8000-000000000001/ab12',
        'GET /s/slug1',
        'GET /s/slug1/media',
        'GET /s/slug1/captions.vtt',
        'GET /docs',
        'GET /docs/init.js',
        'GET /docs/openapi.json',
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'HEAD /v1/jobs/p1',
        'OPTIONS /v1/jobs/agent',
        'PUT /v1/uploads/p1?expires=1&signature=s',
        'GET /v1/downloads/p1?expires=1&signature=s',
        'POST /v1/export/transcript?x=1',
      ].map((line) => {
        const [method, url] = line.split(' ');
        return { method, url };
      }),
    ];

    it('sends every operation and page to the side npm start sends it to, path and query unchanged', async () => {
      const wrong: string[] = [];
      const list = requests();
      assert.ok(list.length >= 45, `${list.length} requests`);
      for (const { method, url } of list) {
        const body = method === 'POST' || method === 'PUT' ? '{"a":1}' : undefined;
        const res = await fetch(`${gateway.url}${url}`, { method, body, headers: body ? { 'content-type': 'application/json' } : {} });
        if (res.status !== 200) {
          wrong.push(`${method} ${url}: ${res.status} ${await res.text()}`);
          continue;
        }
        const got = seen[seen.length - 1];
        const expected = sideInProcess(method, url);
        if (got.backend !== expected) wrong.push(`${method} ${url}: nginx → ${got.backend}-api, npm start → ${expected}-api`);
        if (got.url !== url || got.method !== method) wrong.push(`${method} ${url}: arrived as ${got.method} ${got.url}`);
        if (body && got.bodyBytes !== body.length) wrong.push(`${method} ${url}: body of ${got.bodyBytes} bytes arrived`);
      }
      assert.deepEqual(wrong, []);
      // Both sides are used: a gateway sending everything one way would fail above, but say so plainly.
      assert.ok(seen.some((s) => s.backend === 'command') && seen.some((s) => s.backend === 'query'));
    });

    it("keeps the caller's X-Request-Id and makes one when there is none", async () => {
      await fetch(`${gateway.url}/v1/jobs/p1`, { headers: { 'x-request-id': 'caller-chosen-1' } });
      assert.equal(seen[seen.length - 1].requestId, 'caller-chosen-1');
      await fetch(`${gateway.url}/v1/jobs/p1`);
      assert.match(seen[seen.length - 1].requestId ?? '', /^[0-9a-f]{32}$/);
    });

    it('refuses a JSON body over its 2 MB limit itself, in the API error shape, before any backend sees it', async () => {
      const before = seen.length;
      const res = await fetch(`${gateway.url}/v1/jobs/agent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'x'.repeat(3 * 1024 * 1024) }),
      });
      assert.equal(res.status, 413);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(await res.json(), { error: 'payload_too_large', message: 'request body is too large' });
      assert.equal(seen.length, before);
    });

    it('answers 503 unavailable with Retry-After, as JSON, while a backend is down', async () => {
      query.close();
      query.closeAllConnections();
      const res = await fetch(`${gateway.url}/v1/jobs/p1`);
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
      assert.deepEqual(await res.json(), { error: 'unavailable', message: 'the API is starting or unavailable; retry shortly' });
      // The other side still answers.
      assert.equal((await fetch(`${gateway.url}/v1/jobs/agent`, { method: 'POST', body: '{}' })).status, 200);
    });
  });

  describe('streaming, with the service (npm start) behind it', () => {
    let svc: ServiceProcess;
    let gateway: Gateway;
    let token: string;
    let wav: string;

    before(async function () {
      this.timeout(120_000);
      const dir = mkdtempSync(join(tmpdir(), 'e2e-gateway-'));
      // 80 s of 16 kHz mono: about 2.5 MB, more than the gateway lets a JSON body be.
      wav = await makeTestMedia(dir, 'wav', 80);
      await buildOnce();
      const port = await freePort();
      // The gateway's port is chosen first: the service writes its upload URLs with it.
      const base = `http://127.0.0.1:${port}`;
      const env = {
        DATA_DIR: mkdtempSync(join(tmpdir(), 'e2e-gateway-data-')),
        BASE_URL: `${base}/v1`,
        WEB_URL: base,
        RATE_LIMIT_PER_MINUTE: '100000',
        TRANSCRIBER: 'none',
      };
      svc = await startService(env);
      const servicePort = Number(new URL(svc.base).port);
      gateway = await startGateway(nginx, { command: servicePort, query: servicePort }, port);
      ({ token } = await admin(env, 'drive', 'create', '--name', 'Gateway', '--media-seconds', '3600'));
    });
    after(async () => {
      await gateway?.stop();
      svc?.killAll('SIGKILL');
    });

    const headers = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

    it("streams an upload past the JSON limit to the service, and the job's events while it runs", async () => {
      const size = statSync(wav).size;
      assert.ok(size > 2 * 1024 * 1024, `${size} bytes`);
      const accepted = await fetch(`${gateway.url}/v1/jobs/import/project_media`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({
          project_name: 'Through the gateway',
          add_media: { 'long.wav': { content_type: 'audio/wav', file_size: size } },
        }),
      });
      assert.equal(accepted.status, 201, await accepted.clone().text());
      const { job_id, project_id, upload_urls } = (await accepted.json()) as {
        job_id: string;
        project_id: string;
        upload_urls: Record<string, { upload_url: string }>;
      };
      const uploadUrl = upload_urls['long.wav'].upload_url;
      assert.ok(uploadUrl.startsWith(gateway.url), uploadUrl);

      // The job waits for its upload: a buffering proxy would hold this first event back until the stream ended.
      const stream = await openSse(`${gateway.url}/v1/jobs/${job_id}/events`, { authorization: `Bearer ${token}` });
      assert.equal(stream.status, 200);
      let rest;
      try {
        const first = await stream.nextEvent();
        assert.ok(first, 'a first event while the job waits');
        assert.notEqual((JSON.parse(first.data) as { job_state: string }).job_state, 'stopped');

        const put = await fetch(uploadUrl, {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream' },
          body: readFileSync(wav),
        });
        assert.ok(put.ok, `upload answered ${put.status}: ${await put.text()}`);
        rest = await stream.rest();
      } finally {
        stream.close();
      }
      const last = JSON.parse(rest[rest.length - 1].data) as { job_state: string; result: { status: string } };
      assert.equal(last.job_state, 'stopped');
      assert.equal(last.result.status, 'success');

      // Read through the gateway right after the stop: the project as the job left it.
      const project = (await (await fetch(`${gateway.url}/v1/projects/${project_id}`, { headers: headers() })).json()) as {
        media_files: Record<string, unknown>;
      };
      assert.ok(project.media_files['long.wav'], JSON.stringify(project));
    });

    it("passes the service's own errors through untouched", async () => {
      const res = await fetch(`${gateway.url}/v1/jobs/import/project_media`, {
        method: 'POST',
        headers: headers(),
        // Over the service's 1 MiB JSON limit, under the gateway's 2 MB: the service answers.
        body: JSON.stringify({ project_name: 'x'.repeat(1536 * 1024) }),
      });
      assert.equal(res.status, 413);
      const body = (await res.json()) as { error: string };
      assert.equal(body.error, 'payload_too_large');
      assert.ok(res.headers.get('x-request-id'), 'the service answered (it sets X-Request-Id)');
    });
  });
});
