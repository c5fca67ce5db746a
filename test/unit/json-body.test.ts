import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import Koa from 'koa';
import { createHttpServer } from '../../lib/http/listen';
import { jsonBody } from '../../lib/http/middleware';

describe('JSON body read limit', () => {
  it('cuts a request whose JSON body trickles past the read limit, and takes one that arrives in time', async () => {
    const app = new Koa();
    app.use(jsonBody(1024, { readTimeoutMs: 300 }));
    app.use((ctx) => {
      ctx.body = { got: ctx.request.body };
    });
    const server = createHttpServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const started = Date.now();
      const closed = await new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"a"');
        });
        let text = '';
        socket.on('data', (d) => (text += d.toString()));
        socket.on('close', () => resolve(text));
        socket.on('error', () => undefined);
      });
      const ms = Date.now() - started;
      assert.ok(ms >= 250 && ms < 3000, `closed after ${ms} ms`);
      assert.doesNotMatch(closed, /200 OK/);

      const res = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"a":1}',
      });
      assert.deepEqual(await res.json(), { got: { a: 1 } });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
