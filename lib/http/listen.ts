import { createServer, type RequestListener, type Server } from 'node:http';
import type { HttpApp } from './app';

/**
 * An HTTP server whose limits, not Node's defaults (60 s for headers, 300 s per request, 2000
 * headers), bound what a slow or hostile client can hold: a connection that trickles its headers
 * is cut after 20 s, one silent for 60 s is closed, and no request lasts over 30 minutes (a
 * one-shot upload of a large file takes long; JSON bodies have their own 60 s read limit, see
 * `jsonBody`). keepAliveTimeout is Node's 5 s, set here so it is seen: a proxy in front must drop
 * idle upstream connections sooner than that, or it may reuse one the server is just closing.
 */
export function createHttpServer(handler: RequestListener): Server {
  const server = createServer(handler);
  server.headersTimeout = 20_000;
  server.requestTimeout = 30 * 60_000;
  server.timeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.maxHeadersCount = 100;
  return server;
}

/** Listens and resolves once bound; `close` stops accepting and waits for open requests. */
export async function listen(app: HttpApp, port: number, host?: string): Promise<{ server: Server; close(): Promise<void> }> {
  const server = createHttpServer(app.callback());
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
