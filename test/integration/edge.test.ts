import assert from 'node:assert/strict';
import { revokeToken } from '../../lib/app/admin';
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
      expectError(await h.http.get('/v1/status'), 401, 'unauthorized');
      expectError(await h.http.get('/v1/status').set({ Authorization: 'Token abc' }), 401, 'unauthorized');
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
      [
        'an upload item (not yet supported)',
        { project_name: 'x', add_media: { 'a.wav': { content_type: 'audio/wav', file_size: 10 } } },
        /upload items/,
      ],
      ['an item with both url and tracks', { project_name: 'x', add_media: { 'a.wav': { url, tracks: [{ media: 'b' }] } } }, /exactly one/],
      ['a bad language code', { project_name: 'x', add_media: { 'a.wav': { url, language: 'english' } } }, /language/],
      [
        'a clip naming unknown media',
        { project_name: 'x', add_media: { 'a.wav': { url } }, add_compositions: [{ name: 'c', clips: [{ media: 'b.wav' }] }] },
        /add_compositions\[0\]\.clips\[0\]\.media/,
      ],
      [
        'a composition without a name',
        { project_name: 'x', add_media: { 'a.wav': { url } }, add_compositions: [{ clips: [] }] },
        /add_compositions\[0\]\.name is required/,
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
      ['a body that is an array', [], /body must be object/],
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
