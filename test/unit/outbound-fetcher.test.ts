import assert from 'node:assert/strict';
import dnsPromises from 'node:dns/promises';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { createOutboundFetcher, isAddressAllowed, OutboundError, parseAllowlist } from '../../lib/adapters/http/outbound-fetcher';
import { waitFor } from '../fixtures/wait';

// Only loopback servers: these tests never send traffic anywhere else.
async function serve(handler: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const text = async (body: Readable): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

const rejectsWith = (reason: OutboundError['reason'], message?: RegExp) => (err: unknown) => {
  assert.ok(err instanceof OutboundError, `expected an OutboundError, got ${String(err)}`);
  assert.equal(err.reason, reason, err.message);
  if (message) assert.match(err.message, message);
  return true;
};

describe('OutboundFetcher: undici with an address guard', () => {
  const servers: Server[] = [];
  let hits = 0;
  const start = async (handler: RequestListener) => {
    const started = await serve((req, res) => (hits++, handler(req, res)));
    servers.push(started.server);
    return started.url;
  };
  beforeEach(() => (hits = 0));
  afterEach(() => servers.splice(0).forEach((s) => s.closeAllConnections() ?? s.close()));

  const hello: RequestListener = (_req, res) => res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': 5 }).end('hello');

  it('refuses a loopback address by default without connecting', async () => {
    const url = await start(hello);
    await assert.rejects(createOutboundFetcher({ allowlist: [] }).get(`${url}/a.wav`, {}), rejectsWith('blocked_address', /127\.0\.0\.1/));
    assert.equal(hits, 0);
  });

  it('refuses localhost, which resolves to loopback', async () => {
    const url = (await start(hello)).replace('127.0.0.1', 'localhost');
    await assert.rejects(createOutboundFetcher({ allowlist: [] }).get(url, {}), rejectsWith('blocked_address', /localhost/));
  });

  for (const entry of ['127.0.0.1', '127.0.0.0/8', 'localhost']) {
    it(`fetches from an allow-listed loopback server (${entry})`, async () => {
      const url = await start(hello);
      const fetched = await createOutboundFetcher({ allowlist: [entry] }).get(
        `${url.replace('127.0.0.1', entry === 'localhost' ? 'localhost' : '127.0.0.1')}/a.wav`,
        {},
      );
      assert.equal(fetched.status, 200);
      assert.equal(fetched.contentType, 'audio/wav');
      assert.equal(fetched.contentLength, 5);
      assert.equal(await text(fetched.body), 'hello');
    });
  }

  it('connects to the address it checked, never to a fresh DNS answer (rebinding)', async () => {
    const url = await start(hello);
    // The guard's lookup says 127.0.0.1; the system resolver does not know the name at all, so
    // the fetch can only succeed if the connection reuses the checked address.
    const original = dnsPromises.lookup;
    const stub = async () => [{ address: '127.0.0.1', family: 4 }];
    dnsPromises.lookup = stub as unknown as typeof dnsPromises.lookup;
    try {
      const fetched = await createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(url.replace('127.0.0.1', 'rebind.invalid'), {});
      assert.equal(await text(fetched.body), 'hello');
    } finally {
      dnsPromises.lookup = original;
    }
  });

  it('follows a relative redirect and reports the final URL', async () => {
    const url = await start((req, res) => (req.url === '/old' ? res.writeHead(302, { location: '/new' }).end() : hello(req, res)));
    const fetched = await createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(`${url}/old`, {});
    assert.equal(fetched.finalUrl, `${url}/new`);
    assert.equal(await text(fetched.body), 'hello');
  });

  it('refuses a redirect from an allowed server to an address that is not allowed', async () => {
    const target = await start(hello);
    const url = await start((_req, res) => res.writeHead(302, { location: target.replace('127.0.0.1', '127.0.0.2') }).end());
    await assert.rejects(createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(url, {}), rejectsWith('blocked_address', /127\.0\.0\.2/));
    assert.equal(hits, 1);
  });

  it('gives up after maxRedirects', async () => {
    const url = await start((req, res) => res.writeHead(301, { location: `/hop${Number(req.url?.slice(4) || 0) + 1}` }).end());
    const fetcher = createOutboundFetcher({ allowlist: ['127.0.0.1'], maxRedirects: 3 });
    await assert.rejects(fetcher.get(`${url}/hop0`, {}), rejectsWith('too_many_redirects', /127\.0\.0\.1.*3/));
    assert.equal(hits, 4);
  });

  it('does not forward credentials to another origin on redirect', async () => {
    let seen: string | undefined = 'unset';
    const target = await start((req, res) => ((seen = req.headers.authorization), hello(req, res)));
    const url = await start((_req, res) => res.writeHead(307, { location: target }).end());
    await createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(url, { headers: { authorization: 'Bearer secret' } });
    assert.equal(seen, undefined);
  });

  it('treats a non-2xx answer as bad_status', async () => {
    const url = await start((_req, res) => res.writeHead(404).end('nope'));
    await assert.rejects(createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(url, {}), rejectsWith('bad_status', /404/));
  });

  for (const url of ['ftp://127.0.0.1/a.wav', 'file:///etc/passwd', 'not a url', 'http://']) {
    it(`refuses ${JSON.stringify(url)} as bad_url`, async () => {
      await assert.rejects(createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(url, {}), rejectsWith('bad_url'));
    });
  }

  it('reports a closed port as a network error naming the host', async () => {
    const url = await start(hello);
    await new Promise((resolve) => servers.pop()?.close(resolve));
    await assert.rejects(createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(url, {}), rejectsWith('network', /127\.0\.0\.1/));
  });

  it('times out a server that never sends headers', async () => {
    const url = await start(() => undefined);
    const fetcher = createOutboundFetcher({ allowlist: ['127.0.0.1'], headersTimeoutMs: 200 });
    await assert.rejects(fetcher.get(url, {}), rejectsWith('timeout', /127\.0\.0\.1/));
  });

  it('cancels a slow body when the signal aborts', async () => {
    let closed = false;
    const url = await start((req, res) => {
      res.writeHead(200).write('first chunk');
      req.socket.on('close', () => (closed = true));
    });
    const controller = new AbortController();
    const fetched = await createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(url, { signal: controller.signal });
    const reading = text(fetched.body);
    controller.abort();
    await assert.rejects(reading, { name: 'AbortError' });
    await waitFor(() => closed, { what: 'the server to see the connection close' });
  });

  it('stops before connecting when the signal is already aborted', async () => {
    const url = await start(hello);
    const fetcher = createOutboundFetcher({ allowlist: ['127.0.0.1'] });
    await assert.rejects(fetcher.get(url, { signal: AbortSignal.abort() }), { name: 'AbortError' });
    assert.equal(hits, 0);
  });
});

describe('isAddressAllowed', () => {
  const none = parseAllowlist([]);
  const table: [string, boolean][] = [
    ['8.8.8.8', true],
    ['2001:4860:4860::8888', true],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['127.0.0.1', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['255.255.255.255', false],
    ['224.0.0.1', false],
    ['::1', false],
    ['::', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['fd00:ec2::254', false],
    ['not-an-ip', false],
  ];
  for (const [address, allowed] of table) {
    it(`${allowed ? 'allows' : 'refuses'} ${address} with an empty allowlist`, () =>
      assert.equal(isAddressAllowed(address, none), allowed));
  }

  it('allows listed addresses and ranges, also in their IPv4-mapped form', () => {
    const list = parseAllowlist(['10.0.0.0/8', '192.168.1.5', 'fc00::/7']);
    assert.equal(isAddressAllowed('10.9.8.7', list), true);
    assert.equal(isAddressAllowed('::ffff:10.9.8.7', list), true);
    assert.equal(isAddressAllowed('192.168.1.5', list), true);
    assert.equal(isAddressAllowed('192.168.1.6', list), false);
    assert.equal(isAddressAllowed('fd12::1', list), true);
  });

  it('reaches a metadata address only through an exact entry, not a covering range', () => {
    assert.equal(isAddressAllowed('169.254.169.254', parseAllowlist(['169.254.0.0/16'])), false);
    assert.equal(isAddressAllowed('169.254.1.1', parseAllowlist(['169.254.0.0/16'])), true);
    assert.equal(isAddressAllowed('169.254.169.254', parseAllowlist(['169.254.169.254'])), true);
  });

  it('keeps host-name entries apart from addresses', () => {
    const list = parseAllowlist([' media.internal ', '*.corp.example']);
    assert.deepEqual([...list.hosts], ['media.internal']);
    assert.deepEqual(list.domainSuffixes, ['.corp.example']);
    assert.equal(isAddressAllowed('10.0.0.1', list), false);
  });

  for (const entry of ['10.0.0.0/33', '1.2.3', 'exa mple.com', 'http://x', '::1/129', '-bad.com']) {
    it(`parseAllowlist rejects ${JSON.stringify(entry)}, naming it`, () => {
      assert.throws(
        () => parseAllowlist(['ok.example', entry]),
        (err: Error) => err.message.includes(`"${entry}"`),
      );
    });
  }
});
