import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOutboundFetcher, OutboundError } from '../../lib/adapters/http/outbound-fetcher';
import { AppError } from '../../lib/domain/errors';

/** What the job runner reads of a failed fetch: an AppError that fails its file instead of retrying the job. */
describe('OutboundError in the AppError family', () => {
  let server: Server;
  let base: string;
  before(async () => {
    server = createServer((req, res) => res.writeHead(req.url === '/missing' ? 404 : 200).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const failure = async (fetching: Promise<unknown>): Promise<OutboundError> => {
    const err = await fetching.then(
      () => assert.fail('expected the fetch to fail'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OutboundError, String(err));
    assert.ok(err instanceof AppError);
    assert.equal(err.retriable, false, 'a peer’s failure stays with its file');
    assert.equal(err.name, 'OutboundError');
    return err;
  };

  it('a refused address is the URL’s fault: invalid_input', async () => {
    const err = await failure(createOutboundFetcher({ allowlist: [] }).get(`${base}/a.wav`, {}));
    assert.equal(err.reason, 'blocked_address');
    assert.equal(err.code, 'invalid_input');
  });

  it('a status other than 2xx carries the peer’s status apart from the error’s own', async () => {
    const err = await failure(createOutboundFetcher({ allowlist: ['127.0.0.1'] }).get(`${base}/missing`, {}));
    assert.equal(err.reason, 'bad_status');
    assert.equal(err.peerStatus, 404);
    assert.equal(err.message, `${new URL(base).host} answered HTTP 404`);
  });

  it('a connection that fails is the peer’s: unavailable, and still not retriable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const err = await failure(createOutboundFetcher({ allowlist: ['127.0.0.1'] }).post(`http://127.0.0.1:${port}/hook`, { body: '{}' }));
    assert.equal(err.reason, 'network');
    assert.equal(err.code, 'unavailable');
  });
});
