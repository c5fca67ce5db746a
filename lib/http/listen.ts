import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
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
  server.on('clientError', answerClientError);
  return server;
}

/**
 * What node's parser refused before any route saw the request, answered as every error is
 * (`{error, message}`, JSON) with the status node would send: headers or a URL past node's 16 KiB
 * (431; node's own answer had no body), a header timeout (408), malformed HTTP (400). The
 * connection closes after it, as node's does.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, error, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'invalid_input', 'the request is not well-formed HTTP'];
  const body = JSON.stringify({ error, message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

const CLIENT_ERRORS: Record<string, [status: number, error: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'invalid_input',
    'the request line and headers are too large (at most 16 KiB together): send long values in a POST body, or shorter query parameters',
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'invalid_input', 'the request headers did not arrive in time'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'payload_too_large', 'chunk extensions are too large'],
};

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
