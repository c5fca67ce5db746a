import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import supertest from 'supertest';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { revokeToken } from '../../lib/app/admin';
import { createAuthenticator, principalsByTokenId } from '../../lib/app/tenancy';
import { createWebSessions } from '../../lib/app/web-sessions';
import { createHttpServer } from '../../lib/http/listen';
import { createMetrics } from '../../lib/observability/metrics';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { buildCatalog } from '../../lib/domain/agent/catalog';
import { createApp as createQueryApp } from '../../services/query-api/app';
import { startHarness, type Harness } from '../fixtures/harness';

describe('HTTP edge: auth, validation, errors, rate limit', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => (h = await startHarness({ maxRequestBytes: 64 * 1024 })));
  after(async () => h?.close());

  const post = (body: unknown, token?: string) =>
    h.http
      .post('/v1/jobs/import/project_media')
      .set(h.auth(token))
      .send(body as object);
  const expectError = (res: { status: number; body: Record<string, unknown> }, status: number, error: string, message?: RegExp) => {
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.equal(res.body.error, error);
    assert.equal(typeof res.body.message, 'string');
    if (message) assert.match(res.body.message as string, message);
  };

  describe('GET /v1/status', () => {
    it('answers the drive of the token and the API version', async () => {
      const res = await h.http.get('/v1/status').set(h.auth());
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { drive_id: h.drive.drive_id, drive_name: 'Test drive', api_version: '1.2' });
      assert.ok(res.headers['x-request-id']);
    });

    it('is 401 unauthorized without a token, with a malformed one, and with an unknown one', async () => {
      expectError(await h.http.get('/v1/status'), 401, 'unauthorized', /missing API token/);
      expectError(await h.http.get('/v1/status').set({ Authorization: 'Token abc' }), 401, 'unauthorized', /must use the Bearer scheme/);
      expectError(await h.http.get('/v1/status').set({ Authorization: 'Basic abc' }), 401, 'unauthorized', /must use the Bearer scheme/);
      expectError(await h.http.get('/v1/status').set(h.auth('mps_0123456789abcdef_' + 'x'.repeat(43))), 401, 'unauthorized');
    });

    it('accepts a second token of the drive and refuses it once revoked', async () => {
      const t = await h.newToken();
      assert.equal((await h.http.get('/v1/status').set(h.auth(t.token))).status, 200);
      await revokeToken(h.admin, t.token_id);
      expectError(await h.http.get('/v1/status').set(h.auth(t.token)), 401, 'unauthorized');
    });

    it('echoes a sane X-Request-Id from the caller', async () => {
      const res = await h.http.get('/v1/status').set(h.auth()).set('X-Request-Id', 'trace-123');
      assert.equal(res.headers['x-request-id'], 'trace-123');
    });
  });

  it('answers 404 not_found for an unknown route', async () => {
    expectError(await h.http.get('/v1/nothing-here').set(h.auth()), 404, 'not_found');
    expectError(await h.http.post('/v1/jobs/import/other').set(h.auth()).send({}), 404, 'not_found');
  });

  it('answers /healthz without a token', async () => {
    assert.equal((await h.http.get('/healthz')).status, 200);
  });

  describe('operator endpoints: /healthz, /readyz, /metrics', () => {
    /** The query app as its composition root builds it, over stores that may be made to fail. */
    function opsApp(options: { storesDown?: boolean; ready?: () => Promise<void>; metrics?: boolean } = {}) {
      const down = () => Promise.reject(new Error('event store unreachable'));
      const store: EventStore = options.storesDown
        ? { ...h.store, readStream: down, readAll: down, append: down, appendInOrder: down }
        : h.store;
      const read: ReadStore = options.storesDown ? { ...h.read, get: down, find: down } : h.read;
      const metrics = options.metrics ? createMetrics() : undefined;
      const app = createQueryApp({
        logger: pino({ level: 'silent' }),
        authenticate: createAuthenticator({ store, clock: systemClock }),
        limiter: new RateLimiterMemory({ points: 100, duration: 60 }),
        maxRequestBytes: 1024,
        schemas: h.schemas,
        agentCatalog: buildCatalog(null, null),
        search: h.search,
        blobs: h.processorDeps.blobs,
        webUrl: 'http://web.test',
        sessions: createWebSessions({ store: read, clock: systemClock, ttlSeconds: 3600, principalOf: principalsByTokenId(store) }),
        formLimiter: new RateLimiterMemory({ points: 100, duration: 60 }),
        urlRefusal: () => null,
        clock: systemClock,
        ids: randomIds,
        read,
        store,
        metrics,
        ready: options.ready ?? (async () => void (await Promise.all([store.readStream('health-check'), read.get('health', 'check')]))),
      });
      return { http: supertest(app.callback()), metrics };
    }

    it('answers /healthz 200 while the stores are down: liveness only', async () => {
      const { http } = opsApp({ storesDown: true });
      const res = await http.get('/healthz');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { status: 'ok' });
    });

    it('answers /readyz 200 ready when the readiness check passes', async () => {
      const res = await opsApp().http.get('/readyz');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { status: 'ready' });
    });

    it('answers /readyz 503 unavailable with the reason when a store is down', async () => {
      expectError(await opsApp({ storesDown: true }).http.get('/readyz'), 503, 'unavailable', /event store unreachable/);
    });

    it('answers /readyz 503 when the readiness check hangs', async function () {
      this.timeout(10_000);
      const res = await opsApp({ ready: () => new Promise(() => undefined) }).http.get('/readyz');
      expectError(res, 503, 'unavailable', /did not answer/);
    });

    it('answers /readyz on the harness app (no check given) and /metrics 404 when the service has no metrics', async () => {
      assert.equal((await h.http.get('/readyz')).status, 200);
      expectError(await h.http.get('/metrics'), 404, 'not_found');
    });

    it('serves /metrics without a token, with the routes it timed', async () => {
      const { http, metrics } = opsApp({ metrics: true });
      assert.equal((await http.get('/v1/status').set(h.auth())).status, 200);
      const res = await http.get('/metrics');
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], metrics!.registry.contentType);
      assert.match(res.text, /http_request_duration_seconds_count\{method="GET",route="\/v1\/status",status="200"\} 1/);
    });
  });

  it('serves over an HTTP server with bounded timeouts and header count', () => {
    const server = createHttpServer(() => undefined);
    assert.equal(server.headersTimeout, 20_000);
    assert.equal(server.requestTimeout, 30 * 60_000, 'long enough for a one-shot upload');
    assert.equal(server.timeout, 60_000, 'a silent connection is closed');
    assert.equal(server.keepAliveTimeout, 5_000);
    const count = server.maxHeadersCount ?? Infinity;
    assert.ok(count > 0 && count <= 200, String(count));
  });

  it("answers what node's parser refuses as every error: {error, message} in JSON, with node's status, then closes", async () => {
    const server = createHttpServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const exchange = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        socket.on('error', reject);
      });
    try {
      const long = await exchange(`GET /v1/search?query=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      assert.match(long, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      assert.match(long, /\r\nConnection: close\r\n/);
      const body = JSON.parse(long.slice(long.indexOf('\r\n\r\n') + 4));
      assert.equal(body.error, 'invalid_input');
      assert.match(body.message, /too large \(at most 16 KiB/);
      const garbled = await exchange('NOT HTTP AT ALL\r\n\r\n');
      assert.match(garbled, /^HTTP\/1\.1 400 Bad Request\r\n/);
      assert.deepEqual(JSON.parse(garbled.slice(garbled.indexOf('\r\n\r\n') + 4)), {
        error: 'invalid_input',
        message: 'the request is not well-formed HTTP',
      });
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  describe('route matching, auth and validation agree on case and slashes', () => {
    let jobId: string;
    before(async () => {
      const res = await post({ project_name: 'probe', add_media: { 'a.wav': { url: 'http://media.invalid/a.wav' } } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      jobId = res.body.job_id;
    });

    // A route that matched without its guards once answered 500 for an existing job and 404 for
    // a missing one: a way to learn without a token which job ids exist.
    const variants = () => [
      '/V1/status',
      '/v1/STATUS',
      `/V1/jobs/${jobId}`,
      `/V1/JOBS/${jobId}`,
      `/v1//jobs/${jobId}`,
      `/v1/jobs/${jobId}/`,
      `/v1/%6Aobs/${jobId}`,
      `/v1/jobs/${jobId.toUpperCase()}`,
    ];
    it('never reaches a handler without a token, whatever the case or slashes of the path', async () => {
      for (const path of variants()) {
        const res = await h.http.get(path);
        assert.ok([401, 404].includes(res.status), `${path}: ${res.status} ${JSON.stringify(res.body)}`);
        assert.ok(res.body.error === 'unauthorized' || res.body.error === 'not_found', path);
      }
    });

    it('answers a path in another case 404 not_found, also with a token', async () => {
      expectError(await h.http.get('/V1/status').set(h.auth()), 404, 'not_found');
      expectError(await h.http.get('/v1/STATUS').set(h.auth()), 404, 'not_found');
      expectError(await h.http.get(`/V1/jobs/${jobId}`).set(h.auth()), 404, 'not_found');
      expectError(await h.http.delete(`/V1/jobs/${jobId}`), 404, 'not_found');
    });

    it('keeps a trailing slash working for an authenticated caller', async () => {
      assert.equal((await h.http.get(`/v1/jobs/${jobId}/`).set(h.auth())).status, 200);
    });
  });

  describe('GET /v1/jobs query validation (400 invalid_input naming the parameter)', () => {
    const cases: [string, string, RegExp][] = [
      ['a leap second in created_after', 'created_after=2020-01-01T23:59:60Z', /created_after/],
      ['a leap second in created_before', 'created_before=2016-12-31T23:59:60Z', /created_before/],
      ['limit=Infinity', 'limit=Infinity', /limit/],
      ['limit=1e400', 'limit=1e400', /limit/],
      ['limit=1e3', 'limit=1e3', /limit/],
      ['limit=1e1 (an integer spelled as a float)', 'limit=1e1', /limit/],
      ['limit=0x10', 'limit=0x10', /limit/],
      ['an empty limit', 'limit=', /limit/],
      ['limit=-0', 'limit=-0', /limit/],
      ['a repeated limit', 'limit=20&limit=30', /limit/],
      ['a repeated created_after', 'created_after=2020-01-01T00:00:00Z&created_after=2021-01-01T00:00:00Z', /created_after/],
      ['a repeated type', 'type=agent&type=publish', /type/],
      ['an unknown parameter', 'colour=red', /colour/],
    ];
    for (const [what, query, message] of cases) {
      it(`rejects ${what}`, async () => expectError(await h.http.get(`/v1/jobs?${query}`).set(h.auth()), 400, 'invalid_input', message));
    }

    it('says what a value must be where the schema alone would not (x-message)', async () => {
      const cases: [string, string][] = [
        ['/v1/projects?created_by=foo', `created_by must be a user's UUID or "me"`],
        ['/v1/search?query=*', 'query must be 1 to 500 characters with at least one letter or digit'],
      ];
      for (const [path, message] of cases) {
        const res = await h.http.get(path).set(h.auth());
        assert.deepEqual([res.status, res.body], [400, { error: 'invalid_input', message }], path);
      }
      const bodies: [object, string][] = [
        [{ project_name: '   ' }, 'project_name must be 1 to 255 characters, not only spaces'],
        [{ project_name: 'P', folder_name: ' Clients/Acme' }, 'folder_name must be folder names separated by /'],
        [{ project_name: 'P', folder_name: 'Clients/..' }, 'folder_name must be folder names separated by /'],
        [{ project_name: 'P', add_media: { '': { url: 'https://example.com/a.wav' } } }, 'add_media[""] is not a media reference'],
      ];
      const array = await h.http.post('/v1/jobs/import/project_media').set(h.auth()).send([]);
      assert.deepEqual([array.status, array.body.message], [400, 'request body must be a JSON object, not an array']);
      for (const [body, message] of bodies) {
        const res = await h.http
          .post('/v1/jobs/import/project_media')
          .set(h.auth())
          .send({ add_media: { 'a.wav': { url: 'https://example.com/a.wav' } }, ...body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(res.body.message.startsWith(message), `${JSON.stringify(body)}: ${res.body.message}`);
      }
    });

    it('refuses a malformed percent-escape in the query string (it matched nothing, as if the filter were right)', async () => {
      for (const query of ['name=%ZZ', 'name=%E0%A4', 'name=abc%']) {
        const res = await h.http.get(`/v1/projects?${query}`).set(h.auth());
        expectError(res, 400, 'invalid_input', /malformed percent-escape/);
      }
      const ok = await h.http.get('/v1/projects?name=caf%C3%A9%20au+lait%25').set(h.auth());
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    });

    it('still takes well-formed values', async () => {
      const res = await h.http
        .get('/v1/jobs?limit=5&created_after=2020-01-01T00:00:00.123%2B02:00&created_before=2999-01-01T00:00:00Z')
        .set(h.auth());
      assert.equal(res.status, 200, JSON.stringify(res.body));
    });
  });

  describe('request body encodings', () => {
    const body = JSON.stringify({ project_name: 'x', add_media: { 'a.wav': { url: 'http://media.invalid/a.wav' } } });
    const raw = (headers: Record<string, string>, payload: Buffer | string) =>
      h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .set({ 'Content-Type': 'application/json', ...headers })
        // superagent would otherwise send a Buffer as JSON of its bytes
        .serialize((x: unknown) => x as string)
        .send(payload);

    it('takes a gzip body', async () => {
      const res = await raw({ 'Content-Encoding': 'gzip' }, gzipSync(body));
      assert.equal(res.status, 201, JSON.stringify(res.body));
    });

    it('refuses an unknown Content-Encoding with 415 invalid_input naming it', async () => {
      expectError(await raw({ 'Content-Encoding': 'br2' }, body), 415, 'invalid_input', /Content-Encoding/);
    });

    it('refuses a gzip Content-Encoding over a body that is not gzip with 400 naming it', async () => {
      expectError(await raw({ 'Content-Encoding': 'gzip' }, body), 400, 'invalid_input', /Content-Encoding/);
    });

    it('refuses a truncated gzip body with 400 naming Content-Encoding', async () => {
      const zipped = gzipSync(body);
      expectError(
        await raw({ 'Content-Encoding': 'gzip' }, zipped.subarray(0, zipped.length - 12)),
        400,
        'invalid_input',
        /Content-Encoding/,
      );
    });

    it('counts the size limit after decompression: a small gzip of a large body is 413', async () => {
      const big = JSON.stringify({ project_name: 'x'.repeat(200 * 1024), add_media: { 'a.wav': { url: 'http://media.invalid/a.wav' } } });
      const zipped = gzipSync(big);
      assert.ok(zipped.length < 64 * 1024);
      expectError(await raw({ 'Content-Encoding': 'gzip' }, zipped), 413, 'payload_too_large');
    });

    it('reads Content-Encoding without regard to case', async () => {
      const res = await raw({ 'Content-Encoding': 'GZip' }, gzipSync(body));
      assert.equal(res.status, 201, JSON.stringify(res.body));
    });

    it('refuses a charset other than UTF-8 with 415 invalid_input naming it', async () => {
      expectError(await raw({ 'Content-Type': 'application/json; charset=latin1' }, body), 415, 'invalid_input', /charset/);
    });

    it('takes an explicit UTF-8 charset', async () => {
      const res = await raw({ 'Content-Type': 'application/json; charset=UTF-8' }, body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
    });
  });

  describe('import request validation (400 invalid_input naming the field)', () => {
    const url = 'https://media.example.com/a.wav';
    const cases: [string, unknown, RegExp][] = [
      ['neither project_name nor project_id', { add_media: { 'a.wav': { url } } }, /project_name or project_id/],
      [
        'both project_name and project_id',
        { project_name: 'x', project_id: '8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10', add_media: { 'a.wav': { url } } },
        /mutually exclusive/,
      ],
      ['no media', { project_name: 'x' }, /add_media/],
      ['a malformed project_id', { project_id: 'nope', add_media: { 'a.wav': { url } } }, /project_id/],
      ['a media url that is not a URL', { project_name: 'x', add_media: { 'a.wav': { url: 'not a url' } } }, /add_media\["a\.wav"\]\.url/],
      [
        'a media url with another scheme',
        { project_name: 'x', add_media: { 'a.wav': { url: 'ftp://h/a.wav' } } },
        /add_media\["a\.wav"\]\.url/,
      ],
      ['an unknown field', { project_name: 'x', add_media: { 'a.wav': { url } }, colour: 'red' }, /colour is not a known field/],
      [
        'an unknown field in a media item',
        { project_name: 'x', add_media: { 'a.wav': { url, speed: 2 } } },
        /add_media\["a\.wav"\]\.speed/,
      ],
      ['an upload item without file_size', { project_name: 'x', add_media: { 'a.wav': { content_type: 'audio/wav' } } }, /file_size/],
      [
        'an upload item with a content_type that is no MIME type',
        { project_name: 'x', add_media: { 'a.wav': { content_type: 'wav', file_size: 10 } } },
        /content_type/,
      ],
      [
        'an upload item of no bytes',
        { project_name: 'x', add_media: { 'a.wav': { content_type: 'audio/wav', file_size: 0 } } },
        /file_size/,
      ],
      [
        'an upload item over the size limit',
        { project_name: 'x', add_media: { 'a.wav': { content_type: 'audio/wav', file_size: 1e12 } } },
        /add_media\["a\.wav"\]\.file_size.*limit/,
      ],
      [
        'a two-letter language that is not ISO 639-1',
        { project_name: 'x', add_media: { 'a.wav': { url, language: 'xx' } } },
        /add_media\["a\.wav"\]\.language.*ISO 639-1/,
      ],
      ['an upper-case language code', { project_name: 'x', add_media: { 'a.wav': { url, language: 'EN' } } }, /language/],
      ['an item with both url and tracks', { project_name: 'x', add_media: { 'a.wav': { url, tracks: [{ media: 'b' }] } } }, /exactly one/],
      ['a bad language code', { project_name: 'x', add_media: { 'a.wav': { url, language: 'english' } } }, /language/],
      [
        'a clip naming unknown media',
        { project_name: 'x', add_media: { 'a.wav': { url } }, add_compositions: [{ name: 'c', clips: [{ media: 'b.wav' }] }] },
        /add_compositions\[0\]\.clips\[0\]\.media/,
      ],
      [
        'a composition without clips',
        { project_name: 'x', add_media: { 'a.wav': { url } }, add_compositions: [{ name: 'c' }] },
        /add_compositions\[0\]\.clips is required/,
      ],
      [
        'a composition with an fps of 0',
        { project_name: 'x', add_media: { 'a.wav': { url } }, add_compositions: [{ clips: [], fps: 0 }] },
        /add_compositions\[0\]\.fps/,
      ],
      [
        'a sequence track naming unknown media',
        { project_name: 'x', add_media: { seq: { tracks: [{ media: 'zz' }] } } },
        /tracks\[0\]\.media/,
      ],
      ['a bad callback_url', { project_name: 'x', add_media: { 'a.wav': { url } }, callback_url: 'javascript:alert(1)' }, /callback_url/],
      [
        'folder_name with project_id',
        { project_id: '8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10', folder_name: 'A', add_media: { 'a.wav': { url } } },
        /folder_name/,
      ],
      ['an empty project_name', { project_name: '', add_media: { 'a.wav': { url } } }, /project_name/],
      ['a body that is an array', [], /request body must be a JSON object, not an array/],
    ];
    for (const [what, body, message] of cases) {
      it(`rejects ${what}`, async () => expectError(await post(body), 400, 'invalid_input', message));
    }

    it('rejects malformed JSON', async () => {
      const res = await h.http
        .post('/v1/jobs/import/project_media')
        .set(h.auth())
        .set('Content-Type', 'application/json')
        .send('{"project_name": ');
      expectError(res, 400, 'invalid_input', /JSON/);
    });

    it('rejects a body over the size limit with 413', async () => {
      const res = await post({ project_name: 'x'.repeat(100 * 1024), add_media: { 'a.wav': { url } } });
      expectError(res, 413, 'payload_too_large');
    });

    it('checks project_id: 404 for a project that does not exist', async () => {
      expectError(await post({ project_id: '8c1f2a52-3b1e-4c55-9f2e-1d1b3b1c9a10', add_media: { 'a.wav': { url } } }), 404, 'not_found');
    });
  });

  describe('outbound guard at acceptance (no allow list)', () => {
    let strict: Harness;
    before(async () => (strict = await startHarness({ allowlist: [] })));
    after(async () => strict?.close());
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'a loopback media URL',
        { add_media: { 'a.wav': { url: 'http://127.0.0.1:8080/a.wav' } } },
        /add_media\["a\.wav"\]\.url: refused: 127\.0\.0\.1 is an internal/,
      ],
      [
        'a metadata-address media URL',
        { add_media: { 'a.wav': { url: 'http://169.254.169.254/latest' } } },
        /169\.254\.169\.254 is an internal/,
      ],
      ['a private IPv6 media URL', { add_media: { 'a.wav': { url: 'http://[fd00::1]/a.wav' } } }, /fd00::1 is an internal/],
      [
        'a localhost callback',
        { add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } }, callback_url: 'http://localhost:3000/hook' },
        /callback_url: refused: localhost/,
      ],
      [
        'a private-range callback',
        { add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } }, callback_url: 'http://10.1.2.3/hook' },
        /callback_url: refused: 10\.1\.2\.3/,
      ],
    ];
    for (const [what, body, message] of cases) {
      it(`refuses ${what} with 400 naming the field`, async () => {
        const res = await strict.http
          .post('/v1/jobs/import/project_media')
          .set(strict.auth())
          .send({ project_name: 'x', ...body });
        expectError(res, 400, 'invalid_input', message);
      });
    }
    it('accepts public addresses and host names (checked again when fetched)', async () => {
      const res = await strict.http
        .post('/v1/jobs/import/project_media')
        .set(strict.auth())
        .send({ project_name: 'x', add_media: { 'a.wav': { url: 'http://media.invalid/a.wav' } }, callback_url: 'https://8.8.8.8/hook' });
      assert.equal(res.status, 201);
    });
  });

  describe('rate limit', () => {
    it('answers 429 with Retry-After and the X-RateLimit headers once a token used its minute', async () => {
      const limited = await startHarness({ rateLimitPerMinute: 3 });
      try {
        for (let i = 0; i < 3; i++) {
          const ok = await limited.http.get('/v1/status').set(limited.auth());
          assert.equal(ok.status, 200);
          assert.equal(ok.headers['x-ratelimit-remaining'], String(2 - i));
          assert.equal(ok.headers['x-ratelimit-consumed'], String(i + 1));
        }
        const res = await limited.http.get('/v1/status').set(limited.auth());
        expectError(res, 429, 'rate_limit_exceeded');
        assert.ok(Number(res.headers['retry-after']) >= 1);
        assert.equal(res.headers['x-ratelimit-remaining'], '0');
        assert.equal(res.headers['x-ratelimit-consumed'], '4');
        const otherToken = await limited.http.get('/v1/status').set(limited.auth(limited.other.token));
        assert.equal(otherToken.status, 200, 'the limit is per token');
      } finally {
        await limited.close();
      }
    });
  });
});
