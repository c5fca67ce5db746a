import { createServer, type Server } from 'node:http';
import type Koa from 'koa';

/** Listens and resolves once bound; `close` stops accepting and waits for open requests. */
export async function listen(app: Koa, port: number, host?: string): Promise<{ server: Server; close(): Promise<void> }> {
  const server = createServer(app.callback());
  server.requestTimeout = 60_000;
  server.headersTimeout = 20_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
