import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import pino from 'pino';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import supertest from 'supertest';
import type { Authenticate } from '../../lib/app/tenancy';
import { AppError, notFound } from '../../lib/domain/errors';
import { createApiApp, type ApiAppDeps } from '../../lib/http/app';
import { expressLane, type LaneRoute } from '../../lib/http/express-lane';
import { createMetrics } from '../../lib/observability/metrics';

// ---- test doubles -------------------------------------------------------------------------

const principal = {
  driveId: 'd1',
  driveName: 'Drive',
  userId: 'u1',
  firstName: '',
  lastName: '',
  tokenId: 't1',
  mediaSecondsAllowance: null,
};
const authenticate: Authenticate = async (authorization) => {
  if (authorization !== 'Bearer good') throw new AppError('unauthorized', 'invalid or revoked API token');
  return principal;
};

const routes: LaneRoute[] = [
  {
    method: 'GET',
    path: '/jobs/:job_id',
    async handle({ auth, params }) {
      if (params.job_id === 'missing') throw notFound(`job ${params.job_id} does not exist`);
      if (params.job_id === 'broken') throw new Error('a bug with a /server/path in it');
      if (params.job_id === 'kept') return { status: 200, json: '{"kept":true}' };
      return { status: 200, body: { job_id: params.job_id, drive_id: auth.driveId } };
    },
  },
  {
    method: 'POST',
    path: '/jobs/import/project_media',
    async handle({ body, requestId }) {
      return { status: 201, body: { echo: body, request_id: requestId } };
    },
  },
];

const deps = (points = 1000): ApiAppDeps => ({
  logger: pino({ level: 'silent' }),
  authenticate,
  limiter: new RateLimiterMemory({ points, duration: 60 }),
  maxRequestBytes: 1024,
  metrics: createMetrics(),
});

/** The app, and a count of the requests that reached Koa rather than the lane. */
function appWith(d = deps()) {
  return supertest(createApiApp(d, { lane: routes }).callback());
}

/** What two answers must share, without what differs per request (date, a made request id). */
const comparable = (res: supertest.Response) => {
  const { date: _date, 'x-request-id': _id, ...headers } = res.headers;
  return { status: res.status, headers, body: res.body as unknown };
};

// ---- scenarios ----------------------------------------------------------------------------

describe('express lane: which requests it takes', () => {
  const noop = (_req: IncomingMessage, res: ServerResponse) => void res.end();
  let fellBack: string[];
  let server: supertest.Agent;
  beforeEach(() => {
    fellBack = [];
    const fallback: RequestListener = (req, res) => {
      fellBack.push(`${req.method} ${req.url}`);
      res.statusCode = 299;
      noop(req, res);
    };
    server = supertest.agent(expressLane(deps(), routes, fallback));
  });

  it('takes the plain shape of its routes', async () => {
    await server.get('/v1/jobs/job-1').set('Authorization', 'Bearer good').expect(200);
    await server.post('/v1/jobs/import/project_media').set('Authorization', 'Bearer good').send({ a: 1 }).expect(201);
    await server
      .post('/v1/jobs/import/project_media')
      .set('Authorization', 'Bearer good')
      .set('Content-Type', 'application/json; charset=UTF-8')
      .send('{"a":1}')
      .expect(201);
    assert.deepEqual(fellBack, []);
  });

  it('hands everything else to Koa untouched: other routes, cases, slashes, queries, encodings, charsets, sizes', async () => {
    const get = (path: string) => server.get(path).set('Authorization', 'Bearer good').expect(299);
    const post = () => server.post('/v1/jobs/import/project_media').set('Authorization', 'Bearer good');
    await get('/v1/status');
    await get('/V1/jobs/job-1');
    await get('/v1/jobs/job-1/');
    await get('/v1/jobs/job-1?x=1');
    await get('/v1/jobs/job%2D1');
    await get('/v1/jobs/job-1/deliveries');
    await server.head('/v1/jobs/job-1').expect(299);
    await server.delete('/v1/jobs/job-1').expect(299);
    await post().set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send('x').expect(299);
    await post().set('Content-Type', 'application/json; charset=latin1').send('{}').expect(299);
    await post().set('Content-Type', 'text/plain').send('{}').expect(299);
    await post()
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ big: 'x'.repeat(2000) }))
      .expect(299);
    await post().set('Content-Type', 'application/json').set('Content-Length', '0').expect(299);
    assert.equal(fellBack.length, 13);
  });
});

describe('express lane: answers as the Koa pipeline does', () => {
  // `?via=koa` and `Content-Encoding: identity` are ignored by the routes but send a request to Koa.
  const viaKoa = { get: (p: string) => `${p}?via=koa`, post: { 'Content-Encoding': 'identity' } };

  async function both(send: (lane: boolean) => Promise<supertest.Response>) {
    const lane = comparable(await send(true));
    const koa = comparable(await send(false));
    assert.deepEqual(lane, koa);
    return lane;
  }

  const cases: [string, number, (http: supertest.Agent, lane: boolean) => supertest.Test][] = [
    ['a job', 200, (http, lane) => http.get(lane ? '/v1/jobs/job-1' : viaKoa.get('/v1/jobs/job-1')).set('Authorization', 'Bearer good')],
    [
      'an answer kept as JSON text',
      200,
      (http, lane) => http.get(lane ? '/v1/jobs/kept' : viaKoa.get('/v1/jobs/kept')).set('Authorization', 'Bearer good'),
    ],
    ['no token', 401, (http, lane) => http.get(lane ? '/v1/jobs/job-1' : viaKoa.get('/v1/jobs/job-1'))],
    [
      'a handler refusal',
      404,
      (http, lane) => http.get(lane ? '/v1/jobs/missing' : viaKoa.get('/v1/jobs/missing')).set('Authorization', 'Bearer good'),
    ],
    [
      'an unexpected error, which leaks nothing',
      500,
      (http, lane) => http.get(lane ? '/v1/jobs/broken' : viaKoa.get('/v1/jobs/broken')).set('Authorization', 'Bearer good'),
    ],
  ];
  for (const [what, status, send] of cases) {
    it(`${what}: ${status}`, async () => {
      const answer = await both((lane) => send(supertest.agent(createApiApp(deps(), { lane: routes }).callback()), lane));
      assert.equal(answer.status, status);
    });
  }

  const post =
    (body: string, headers: Record<string, string> = {}) =>
    (lane: boolean) =>
      appWith()
        .post('/v1/jobs/import/project_media')
        .set('Authorization', 'Bearer good')
        .set('Content-Type', 'application/json')
        .set('X-Request-Id', 'req-1')
        .set(lane ? {} : viaKoa.post)
        .set(headers)
        .send(body);

  it('a JSON body: 201 with the parsed body', async () => {
    const answer = await both(post('{"project_name":"P","n":[1,2]}'));
    assert.deepEqual(answer.body, { echo: { project_name: 'P', n: [1, 2] }, request_id: 'req-1' });
  });

  it('a body with a byte-order mark: read without it', async () => {
    const answer = await both(post('\ufeff{"a":1}'));
    assert.deepEqual(answer.body, { echo: { a: 1 }, request_id: 'req-1' });
  });

  for (const [what, body, message] of [
    ['malformed JSON', '{"a":', 'request body is not valid JSON'],
    ['a string at the top', '"text"', 'request body must be a JSON object, not a string'],
    ['null at the top', 'null', 'request body must be a JSON object, not null'],
    ['a number at the top', ' 12 ', 'request body must be a JSON object, not a number'],
    ['a __proto__ key', '{"__proto__":{"admin":true}}', 'request body is not valid JSON'],
  ]) {
    it(`${what}: 400 invalid_input, the same in both lanes`, async () => {
      const answer = await both(post(body));
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body, { error: 'invalid_input', message });
    });
  }

  for (const [what, body, field] of [
    ['a lone surrogate in a value', '{"project_name":"sur\\ud800rogate"}', 'project_name'],
    ['a lone low surrogate deep in an array', '{"add_compositions":[{"name":"ok"},{"name":"c\\udc00"}]}', 'add_compositions[1].name'],
    ['a lone surrogate in a key', '{"add_media":{"a\\ud800.wav":{"url":"https://e.com/a.wav"}}}', 'add_media["a\\ud800.wav"]'],
  ]) {
    it(`${what}: 400 invalid_input naming ${field}`, async () => {
      const answer = await both(post(body));
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body, {
        error: 'invalid_input',
        message: `${field} is not valid Unicode text (it holds a lone UTF-16 surrogate, such as \\ud800)`,
      });
    });
  }

  it('a surrogate pair (an emoji, escaped or not): taken', async () => {
    const answer = await both(post('{"a":"\\ud83c\\udfac","b":"🎬"}'));
    assert.deepEqual(answer.body, { echo: { a: '🎬', b: '🎬' }, request_id: 'req-1' });
  });

  it('over the rate limit: 429 with Retry-After and the rate-limit headers', async () => {
    const send = (http: supertest.Agent, lane: boolean) =>
      http.get(lane ? '/v1/jobs/job-1' : viaKoa.get('/v1/jobs/job-1')).set('Authorization', 'Bearer good');
    const answers = [];
    for (const lane of [true, false]) {
      const http = supertest.agent(createApiApp(deps(1), { lane: routes }).callback());
      await send(http, lane).expect(200);
      answers.push(comparable(await send(http, lane)));
    }
    assert.deepEqual(answers[0], answers[1]);
    assert.equal(answers[0].status, 429);
    assert.equal(answers[0].headers['retry-after'], '60');
    assert.equal(answers[0].headers['x-ratelimit-remaining'], '0');
  });

  it('times its requests into the same metric, by route pattern', async () => {
    const d = deps();
    const http = supertest(createApiApp(d, { lane: routes }).callback());
    await http.get('/v1/jobs/job-1').set('Authorization', 'Bearer good').expect(200);
    await http.get('/v1/jobs/job-2?via=koa').set('Authorization', 'Bearer good').expect(200);
    const text = await d.metrics!.registry.metrics();
    assert.match(text, /http_request_duration_seconds_count\{method="GET",route="\/v1\/jobs\/:job_id",status="200"\} 2/);
  });

  it('serves other requests while a declared body has not arrived', async function () {
    this.timeout(5000);
    // Declared longer than sent: the lane waits for the rest, and the client gives up first.
    const http = appWith();
    const cut = await http
      .post('/v1/jobs/import/project_media')
      .set('Authorization', 'Bearer good')
      .set('Content-Type', 'application/json')
      .set('Content-Length', '100')
      .timeout(300)
      .send('{"a":')
      .then(
        () => 'answered',
        (err: { timeout?: number }) => (err.timeout ? 'timed out' : 'failed'),
      );
    assert.equal(cut, 'timed out');
    await http.get('/v1/jobs/job-1').set('Authorization', 'Bearer good').expect(200);
  });
});

describe('express lane: reading a body however it arrives', () => {
  let server: ReturnType<typeof createServer>;
  let port: number;
  before(async () => {
    server = createServer(createApiApp(deps(), { lane: routes }).callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const head = (length: number) =>
    'POST /v1/jobs/import/project_media HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n' +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\nX-Request-Id: req-1\r\n\r\n`;

  /** Sends `pieces` on `socket` (a pause between them) and reads one answer: status and JSON body. */
  async function exchange(socket: Socket, pieces: readonly Buffer[]): Promise<{ status: number; body: unknown }> {
    let text = '';
    const answered = new Promise<{ status: number; body: unknown }>((resolve) => {
      const onData = (chunk: Buffer) => {
        text += chunk.toString('utf8');
        const [headers, body] = text.split('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(headers)?.[1]);
        if (body === undefined || Buffer.byteLength(body) < length) return;
        socket.off('data', onData);
        resolve({ status: Number(headers.split(' ')[1]), body: JSON.parse(body) });
      };
      socket.on('data', onData);
    });
    for (const [i, piece] of pieces.entries()) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 30));
      socket.write(piece);
    }
    return answered;
  }

  const open = () =>
    new Promise<Socket>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket));
    });

  for (const [what, body, expected] of [
    ['an object', '{"project_name":"P","n":[1,2]}', { status: 201, body: { echo: { project_name: 'P', n: [1, 2] }, request_id: 'req-1' } }],
    ['a byte-order mark', '\ufeff{"a":1}', { status: 201, body: { echo: { a: 1 }, request_id: 'req-1' } }],
    [
      'a __proto__ key',
      '{"__proto__":{"admin":true}}',
      { status: 400, body: { error: 'invalid_input', message: 'request body is not valid JSON' } },
    ],
    ['malformed JSON', '{"a":', { status: 400, body: { error: 'invalid_input', message: 'request body is not valid JSON' } }],
  ] as const) {
    it(`${what}, sent with its headers at once or trickling in after them, reads the same`, async () => {
      const bytes = Buffer.from(body, 'utf8');
      const socket = await open();
      try {
        const atOnce = await exchange(socket, [Buffer.concat([Buffer.from(head(bytes.length)), bytes])]);
        // The connection stays usable after a body taken at once: the next request on it is answered.
        const trickled = await exchange(socket, [Buffer.from(head(bytes.length)), bytes.subarray(0, 3), bytes.subarray(3)]);
        assert.deepEqual(atOnce, expected);
        assert.deepEqual(trickled, expected);
      } finally {
        socket.destroy();
      }
    });
  }
});
