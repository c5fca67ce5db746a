import { createServer, type RequestListener, type Server } from 'node:http';
import { openFileLimit } from '../adapters/system/open-files';
import type { HttpApp } from './app';

export type ServerLimits = {
  /**
   * Connections held at once; one more is closed as it is accepted. Unset: half the process's
   * open-file limit, so that connections alone never take every descriptor (each upload also holds
   * a file, and the stores hold theirs).
   */
  maxConnections?: number;
};

/**
 * An HTTP server whose limits, not Node's defaults (60 s for headers, 300 s per request, 2000
 * headers, no cap on connections), bound what a slow or hostile client can hold: a connection
 * that trickles its headers is cut after 20 s, one silent for 60 s is closed, no request lasts
 * over 30 minutes (a one-shot upload of a large file takes long; JSON bodies have their own 60 s
 * read limit, see `jsonBody`; an upload body its own idle deadline), and connections are capped
 * below the open-file limit (issue 19: 600 slow PUTs held 1,021 of 1,024 descriptors).
 * keepAliveTimeout is Node's 5 s, set here so it is seen: a proxy in front must drop idle
 * upstream connections sooner than that, or it may reuse one the server is just closing.
 */
export function createHttpServer(handler: RequestListener, limits: ServerLimits = {}): Server {
  const server = createServer(handler);
  server.headersTimeout = 20_000;
  server.requestTimeout = 30 * 60_000;
  server.timeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.maxHeadersCount = 100;
  server.maxConnections = limits.maxConnections ?? defaultMaxConnections();
  return server;
}

/** Half the open-file soft limit where the system tells it (Linux), else 1,000. */
export function defaultMaxConnections(openFiles = openFileLimit()): number {
  return openFiles === null ? 1000 : Math.max(16, Math.floor(openFiles / 2));
}

/** Listens and resolves once bound; `close` stops accepting and waits for open requests. */
export async function listen(
  app: HttpApp,
  port: number,
  host?: string,
  limits: ServerLimits = {},
): Promise<{ server: Server; close(): Promise<void> }> {
  const server = createHttpServer(app.callback(), limits);
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
