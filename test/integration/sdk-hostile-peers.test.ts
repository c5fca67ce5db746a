import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, ResponseTimeoutError, UnexpectedAnswerError, type Job } from '../../sdk/client';
import { jobDoc } from '../fixtures/job-doc';
import { retrying } from '../../sdk/retry';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The SDK against peers that are not a well-behaved service, each a small loopback server: one
 * that accepts and never answers, one that answers HTML, one whose event stream goes silent, one
 * that restarts under a wait. The bounds are made short here; their defaults are 30 s and 45 s.
 */
describe('the SDK against hostile peers', function () {
  this.timeout(20_000);
  let server: Server;
  let handler: Handler;
  let base: string;
  let requests: string[];
  let dir: string;

  before(async () => {
    server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      handler(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    dir = mkdtempSync(join(tmpdir(), 'sdk-hostile-'));
  });
  beforeEach(() => {
    requests = [];
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const silent: Handler = (req) => req.resume();
  const job = (job_state: Job['job_state']) => jobDoc(job_state);
  const json = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  const importBody = { project_name: 'x', add_media: { 'a.wav': { url: 'http://m.test/a.wav' } } };

  it('gives up on a server that never answers, by fetch and by node:http, after timeoutMs', async () => {
    handler = silent;
    const byHttp = createClient({ baseUrl: base, token: 't', timeoutMs: 300 });
    const byFetch = createClient({ baseUrl: base, token: 't', timeoutMs: 300, fetch: (i, o) => fetch(i, o) });
    for (const call of [() => byHttp.status(), () => byHttp.importMedia(importBody), () => byFetch.importMedia(importBody)]) {
      const started = performance.now();
      await assert.rejects(
        call(),
        (err: Error) => err instanceof ResponseTimeoutError && /no answer from http.* within 0\.3 s/.test(err.message),
      );
      assert.ok(performance.now() - started < 2000);
    }
  });

  it('waits for a job through a silent server only as long as the caller lets it', async () => {
    handler = silent;
    const client = createClient({ baseUrl: base, token: 't', timeoutMs: 200 });
    await assert.rejects(client.waitForJob('j1', { intervalMs: 20, maxOutageMs: 500 }), ResponseTimeoutError);
  });

  it('throws a 2xx that is not JSON as an UnexpectedAnswerError saying what came back', async () => {
    handler = (req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body>Welcome to nginx!</body></html>');
    };
    const byHttp = createClient({ baseUrl: base, token: 't' });
    const byFetch = createClient({ baseUrl: base, token: 't', fetch: (i, o) => fetch(i, o) });
    for (const call of [() => byHttp.importMedia(importBody), () => byFetch.importMedia(importBody), () => byHttp.status()]) {
      await assert.rejects(call(), (err: Error) => {
        assert.ok(err instanceof UnexpectedAnswerError, String(err));
        assert.equal(err.status, 200);
        assert.equal(err.contentType, 'text/html');
        assert.match(err.message, /answered 200 text\/html, not JSON: "<html><body>Welcome to nginx!/);
        return true;
      });
    }
  });

  it('throws an upload answered 200 with a page as an UnexpectedAnswerError, at once, by node:http and by fetch', async () => {
    handler = (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>Sign in to the Wi-Fi</html>'));
    };
    const file = join(dir, 'c.bin');
    writeFileSync(file, Buffer.alloc(1000));
    const client = createClient({ baseUrl: base, token: 't' });
    for (const transport of ['http', 'fetch'] as const) {
      requests = [];
      await assert.rejects(
        client.uploadFile(file, `${base}/uploads/x`, { fresh: true, transport }),
        (err: Error) => err instanceof UnexpectedAnswerError && /200 text\/html, not JSON: "<html>Sign in/.test(err.message),
      );
      assert.equal(requests.length, 1, 'not retried: asking again changes nothing');
    }
  });

  it('polls once the event stream goes silent past streamIdleMs (a dead stream), and gets the end', async () => {
    let polls = 0;
    handler = (req, res) => {
      if (req.url?.endsWith('/events')) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify(job('running'))}\n\n`);
        return; // then nothing, ever
      }
      polls += 1;
      json(res, 200, job('stopped'));
    };
    for (const fetchOption of [{}, { fetch: (i: string | URL | Request, o?: RequestInit) => fetch(i, o) }]) {
      polls = 0;
      const client = createClient({ baseUrl: base, token: 't', streamIdleMs: 300, ...fetchOption });
      const started = performance.now();
      const seen: string[] = [];
      const done = await client.waitForJob('j1', { intervalMs: 20, onUpdate: (j) => seen.push(j.job_state) });
      assert.equal(done.job_state, 'stopped');
      assert.deepEqual(seen, ['running', 'stopped']);
      assert.equal(polls, 1);
      assert.ok(performance.now() - started < 3000);
    }
  });

  it('keeps polling through a restart (connections reset, then 503s) and fails only after maxOutageMs of failures', async () => {
    let down = true;
    let failures = 0;
    handler = (req, res) => {
      if (req.url?.endsWith('/events')) return json(res, 404, { error: 'not_found', message: 'no events here' });
      if (down) {
        failures += 1;
        if (failures % 2) return req.socket.destroy();
        return json(res, 503, { error: 'unavailable', message: 'starting' });
      }
      json(res, 200, job('stopped'));
    };
    const client = createClient({ baseUrl: base, token: 't', maxAttempts: 1 });
    const waiting = client.waitForJob('j1', { intervalMs: 20, maxOutageMs: 10_000 });
    setTimeout(() => (down = false), 1500);
    assert.equal((await waiting).job_state, 'stopped');
    assert.ok(failures >= 2, `${failures} failed polls`);

    down = true;
    const started = performance.now();
    await assert.rejects(client.waitForJob('j1', { intervalMs: 20, maxOutageMs: 300 }));
    assert.ok(performance.now() - started < 3000);
  });

  it('refuses a partSize that is not a whole number of bytes before sending anything', async () => {
    handler = (req, res) => json(res, 500, { error: 'internal_error', message: 'no request was expected' });
    const file = join(dir, 'a.bin');
    writeFileSync(file, Buffer.alloc(1000));
    const client = createClient({ baseUrl: base, token: 't' });
    for (const partSize of [0, -5, 1.5, Number.NaN]) {
      await assert.rejects(
        client.uploadFile(file, `${base}/uploads/x`, { partSize }),
        /partSize must be a whole number of bytes, 1 or more/,
      );
    }
    assert.deepEqual(requests, []);
  });

  it('gives up on an upload PUT the server never answers after idleMs without progress, by node:http and by fetch', async () => {
    handler = silent;
    const file = join(dir, 'b.bin');
    writeFileSync(file, Buffer.alloc(200_000));
    for (const transport of ['http', 'fetch'] as const) {
      const client = createClient({ baseUrl: base, token: 't', timeoutMs: 300 });
      const started = performance.now();
      await assert.rejects(client.uploadFile(file, `${base}/uploads/x`, { fresh: true, retries: 0, transport }), ResponseTimeoutError);
      assert.ok(performance.now() - started < 3000);
    }
  });
});

describe('the SDK retry of a 429 passes a streamed body through', () => {
  it('never clones a request whose body is a stream (the clone would buffer all of it): it is sent once, as given', async () => {
    const seen: { input: unknown; body: unknown }[] = [];
    const spy = (async (input: string | URL | Request, init?: RequestInit) => {
      seen.push({ input, body: init?.body });
      return new Response(null, { status: 429, headers: { 'Retry-After': '0' } });
    }) as typeof fetch;
    const body = new ReadableStream<Uint8Array>({ pull: (c) => c.close() });
    const answer = await retrying(spy, { maxAttempts: 4, maxRetryAfterSeconds: 60 })('http://u.test/put', {
      method: 'PUT',
      body,
      duplex: 'half',
    } as RequestInit);
    assert.equal(answer.status, 429, 'answered as it is: a stream cannot be sent again');
    assert.equal(seen.length, 1);
    assert.equal(seen[0].body, body, 'the very stream, not a tee of it');
    assert.equal(seen[0].input, 'http://u.test/put');
  });
});
