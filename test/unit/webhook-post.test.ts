import assert from 'node:assert/strict';
import dnsPromises from 'node:dns/promises';
import { getEventListeners } from 'node:events';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { createOutboundFetcher, OutboundError } from '../../lib/adapters/http/outbound-fetcher';
import { generateWebhookSecret } from '../../lib/app/tokens';
import { signWebhook } from '../../lib/app/webhook-signature';
import { failOnUncaughtException, waitFor } from '../fixtures/wait';
import { MOVED_PATH, startWebhookReceiver, type ReceiverAnswer } from '../fixtures/webhook-receiver';

const SHORT_MS = 300;
/** How long past the deadline a post may take to give up: generous for a loaded CI machine. */
const GRACE_MS = 700;

/** A failure fit for an operator: an OutboundError naming the host, and no Node internals. */
const failsWith = (reason: OutboundError['reason'], message: RegExp) => (err: unknown) => {
  assert.ok(err instanceof OutboundError, `expected an OutboundError, got ${String(err)}`);
  assert.equal(err.reason, reason, err.message);
  assert.match(err.message, message);
  assert.doesNotMatch(err.message, /node:|\bat \w|socket hang up|\/(tmp|work|home|usr)\b/);
  return true;
};

/** Runs `fn`, returning its rejection and how long it took to come. */
async function timedRejection(fn: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = Date.now();
  try {
    await fn();
  } catch (err) {
    return { err, ms: Date.now() - started };
  }
  assert.fail('expected a rejection');
}

describe('OutboundFetcher.post: one guarded delivery under one deadline', function () {
  this.timeout(10_000);
  const secret = generateWebhookSecret();
  const fetcher = createOutboundFetcher({ allowlist: ['127.0.0.1'], userAgent: 'webhook-test/1.0' });
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

  beforeEach(async () => (receiver = await startWebhookReceiver({ secret })));
  afterEach(async () => {
    // Whatever happened, the fetcher must not leave a connection open.
    await waitFor(() => receiver.openSockets() === 0, { timeoutMs: 2000, what: 'the sender to close its connection' });
    await receiver.close();
  });
  failOnUncaughtException();

  const signed = (body: string) => ({
    'content-type': 'application/json',
    ...signWebhook({ id: 'delivery-1', timestamp: Math.floor(Date.now() / 1000), body }, secret),
  });
  const deliver = (answer: ReceiverAnswer, timeoutMs?: number) => {
    receiver.script([answer]);
    const body = '{"job_id":"j1"}';
    return fetcher.post(receiver.url(), { body, headers: signed(body), timeoutMs });
  };

  it('delivers the body and headers byte for byte, adding User-Agent and Content-Length', async () => {
    const body = JSON.stringify({ job_id: 'j1', name: 'Café ☕ 🎬', nested: { ok: true } });
    const started = Date.now();
    // A framing header of the caller's cannot contradict the body.
    const answer = await fetcher.post(receiver.url('/hooks/a?x=1'), { body, headers: { ...signed(body), 'Content-Length': '3' } });
    const elapsed = Date.now() - started;

    assert.equal(answer.status, 200);
    assert.ok(answer.durationMs >= 0 && answer.durationMs <= elapsed + 1, `durationMs ${answer.durationMs} within ${elapsed}`);
    const [request] = await receiver.waitFor(1);
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/hooks/a?x=1');
    assert.ok(request.body.equals(Buffer.from(body, 'utf8')), 'byte-identical body');
    assert.equal(request.headers['content-length'], String(Buffer.byteLength(body)));
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers['user-agent'], 'webhook-test/1.0');
    assert.equal(request.headers['webhook-id'], 'delivery-1');
    assert.equal(request.verified, true, 'standardwebhooks verifies the signature as received');
  });

  it('sends a Buffer body as is, bytes that are not UTF-8 included', async () => {
    const body = Buffer.from([0, 1, 0xff, 0xfe, 0x80, 10, 13]);
    await fetcher.post(receiver.url(), { body, headers: { 'content-type': 'application/octet-stream' } });
    const [request] = await receiver.waitFor(1);
    assert.ok(request.body.equals(body));
    assert.equal(request.headers['content-length'], '7');
    assert.equal(request.verified, false, 'an unsigned request is not taken as verified');
  });

  for (const status of [200, 204, 410, 500] as const) {
    it(`resolves with the receiver's ${status}`, async () => {
      assert.equal((await deliver(status)).status, status);
      assert.equal(receiver.received.length, 1);
    });
  }

  it('does not follow a 301: it is the answer', async () => {
    assert.equal((await deliver(301)).status, 301);
    // The post has ended, so a redirect it followed would already have been requested.
    assert.deepEqual(
      receiver.received.map((r) => r.path),
      ['/hook'],
    );
    assert.ok(!receiver.received.some((r) => r.path === MOVED_PATH));
  });

  it('times out a receiver that never answers, at the deadline, and closes the connection', async () => {
    const { err, ms } = await timedRejection(() => deliver('slow', SHORT_MS));
    failsWith('timeout', /127\.0\.0\.1:\d+ timed out: no answer within 0\.3 s/)(err);
    assert.ok(ms >= SHORT_MS - 20 && ms < SHORT_MS + GRACE_MS, `gave up after ${ms} ms`);
    await waitFor(() => receiver.openSockets() === 0, { timeoutMs: GRACE_MS, what: 'the connection to close' });
  });

  it('times out an answer that trickles, at the same deadline, and closes the connection', async () => {
    const { err, ms } = await timedRejection(() => deliver('trickle', SHORT_MS));
    failsWith('timeout', /timed out: its answer \(HTTP 200\) did not end within 0\.3 s/)(err);
    assert.ok(ms < SHORT_MS + GRACE_MS, `gave up after ${ms} ms`);
    await waitFor(() => receiver.openSockets() === 0, { timeoutMs: GRACE_MS, what: 'the connection to close' });
    assert.equal(receiver.received.length, 1, 'the request itself was delivered');
  });

  it('reports a receiver that closes the connection without answering', async () => {
    await assert.rejects(deliver('close'), failsWith('network', /127\.0\.0\.1:\d+ closed the connection without answering/));
  });

  it('reports a receiver that resets the connection during its answer', async () => {
    await assert.rejects(deliver('reset'), failsWith('network', /127\.0\.0\.1:\d+ reset the connection during its answer \(HTTP 200\)/));
  });

  it('reads an endless answer only up to its cap, then closes and keeps the status', async () => {
    const answer = await deliver('forever', 5000);
    assert.equal(answer.status, 200);
    assert.ok(answer.durationMs < 5000);
  });

  it('reports a closed port as a network error', async () => {
    const url = receiver.url();
    await receiver.close();
    await assert.rejects(
      fetcher.post(url, { body: '{}' }),
      failsWith('network', /could not connect to 127\.0\.0\.1:\d+: connection refused/),
    );
  });

  it('refuses an answer that is not HTTP', async () => {
    const server: TcpServer = createTcpServer((socket) => socket.on('error', () => undefined).end('SSH-2.0-not-http\r\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      await assert.rejects(fetcher.post(url, { body: '{}' }), failsWith('network', /did not answer with valid HTTP/));
    } finally {
      server.close();
    }
  });

  it('passes the caller’s abort reason through and closes the connection', async () => {
    receiver.script(['slow']);
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const posting = fetcher.post(receiver.url(), { body: '{}', signal: controller.signal });
    await receiver.waitFor(1);
    controller.abort(reason);
    await assert.rejects(posting, (err) => err === reason);
  });

  it('leaves no listener on a signal shared by many deliveries', async () => {
    const shared = new AbortController().signal;
    receiver.script([200, 500, 'close', 'reset', 'slow']);
    for (let i = 0; i < 5; i++)
      await fetcher.post(receiver.url(), { body: '{}', signal: shared, timeoutMs: SHORT_MS }).catch(() => undefined);
    assert.equal(getEventListeners(shared, 'abort').length, 0);
  });

  describe('address guard', () => {
    it('refuses loopback with an empty allow list, without connecting', async () => {
      const strict = createOutboundFetcher({ allowlist: [] });
      await assert.rejects(
        strict.post(receiver.url(), { body: '{}' }),
        failsWith('blocked_address', /refused to post to 127\.0\.0\.1: it resolves to an internal/),
      );
      await assert.rejects(
        strict.post(receiver.url().replace('127.0.0.1', 'localhost'), { body: '{}' }),
        failsWith('blocked_address', /localhost/),
      );
      assert.equal(receiver.received.length, 0);
    });

    it('delivers to loopback once it is allow-listed', async () => {
      assert.equal((await createOutboundFetcher({ allowlist: ['127.0.0.1'] }).post(receiver.url(), { body: '{}' })).status, 200);
      assert.equal(receiver.received.length, 1);
    });

    describe('with a stubbed resolver', () => {
      const original = dnsPromises.lookup;
      let answer: () => Promise<unknown>;
      beforeEach(() => {
        dnsPromises.lookup = (() => answer()) as unknown as typeof dnsPromises.lookup;
      });
      afterEach(() => {
        dnsPromises.lookup = original;
      });

      it('checks the name again at each delivery and connects only to the address it checked', async () => {
        // The system resolver does not know the name: a delivery can only arrive through the checked address.
        const url = receiver.url().replace('127.0.0.1', 'hooks.invalid');
        answer = async () => [{ address: '127.0.0.1', family: 4 }];
        assert.equal((await fetcher.post(url, { body: '{}' })).status, 200);
        answer = async () => [
          { address: '127.0.0.1', family: 4 },
          { address: '10.0.0.7', family: 4 },
        ];
        await assert.rejects(fetcher.post(url, { body: '{}' }), failsWith('blocked_address', /refused to post to hooks\.invalid/));
        assert.equal(receiver.received.length, 1);
      });

      it('counts a look-up that never ends against the same deadline', async () => {
        answer = () => new Promise(() => undefined);
        const url = receiver.url().replace('127.0.0.1', 'hooks.invalid');
        const { err, ms } = await timedRejection(() => fetcher.post(url, { body: '{}', timeoutMs: SHORT_MS }));
        failsWith('timeout', /hooks\.invalid:\d+ timed out/)(err);
        assert.ok(ms < SHORT_MS + GRACE_MS, `gave up after ${ms} ms`);
      });
    });
  });

  for (const url of ['ftp://127.0.0.1/hook', 'not a url']) {
    it(`refuses ${JSON.stringify(url)} as bad_url`, async () => {
      await assert.rejects(fetcher.post(url, { body: '{}' }), (err) => err instanceof OutboundError && err.reason === 'bad_url');
    });
  }
});
