import type { LookupAddress } from 'node:dns';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type Socket } from 'node:net';
import { OutboundError } from '../../../domain/errors';
import type { ParsedAllowlist } from './allowlist';
import { abortReason, headerError, noAnswerWithin, type Action } from './errors';
import { checkedAddresses, pinnedLookup } from './pinned-dns';

/**
 * One hop of an outbound fetch, for GET and POST alike: the host's addresses checked, then one
 * request on a connection of its own that can reach only those addresses, answered as far as its head.
 */

/** The fetcher's options, resolved. */
export interface Settings {
  readonly allowlist: ParsedAllowlist;
  readonly userAgent: string;
  /** The DNS look-up's deadline, and a GET's for its answer's head. */
  readonly headersTimeoutMs: number;
  /** How long a GET's body may stall. */
  readonly bodyTimeoutMs: number;
}

/** How a request is phrased: the method, what it sends, and the verb its error messages use. */
export interface Outgoing {
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  readonly body?: Buffer;
  readonly action: Action;
  /** Own deadline for the answer's head; without one the caller's signal is the only limit. */
  readonly headersTimeoutMs?: number;
}

/** One request on a connection of its own, answered as far as its headers. */
export interface Exchange {
  readonly url: URL;
  readonly res: IncomingMessage;
  /** Where the exchange's later errors go: Node can emit them at any time, even after the body ended. */
  onError(handler: (err: unknown) => void): void;
  /** Closes the connection; later errors are dropped. */
  close(): void;
  /** Bytes that arrived after the final head, as sent (undefined until the head is complete). */
  rawBodyBytes(): number | undefined;
}

/** The URL of a request or of a redirect from `base`; only http and https are fetched. */
export function parseUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw new OutboundError('bad_url', base ? `${base.host} redirected to a malformed URL` : 'the URL is malformed');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundError('bad_url', `unsupported URL scheme "${url.protocol.slice(0, -1)}" (only http and https are fetched)`);
  }
  return url;
}

const hostName = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/** Checks the hop's host, then sends the request; resolves once the answer's head has arrived. */
export async function fetchHop(url: URL, outgoing: Outgoing, settings: Settings, signal?: AbortSignal): Promise<Exchange> {
  if (signal?.aborted) throw abortReason(signal);
  const guard = { allowlist: settings.allowlist, timeoutMs: settings.headersTimeoutMs };
  const pinned = await checkedAddresses(hostName(url), guard, outgoing.action, signal);
  // Checked again: an abort during the look-up must not open a connection.
  if (signal?.aborted) throw abortReason(signal);
  return sendRequest(url, outgoing, pinned, settings.userAgent, signal);
}

/** Resolves with the answer's head; rejects with what went wrong before it, in words (see headerError). */
function sendRequest(url: URL, outgoing: Outgoing, pinned: LookupAddress[], userAgent: string, signal?: AbortSignal): Promise<Exchange> {
  const req = openRequest(url, outgoing, pinned, userAgent);
  const errors = createErrorRoute();
  // Permanent: an 'error' with no listener would be an uncaught exception.
  req.on('error', errors.emit);
  let rawBodyBytes: () => number | undefined = () => undefined;
  req.on('socket', (socket) => (rawBodyBytes = countRawBody(socket)));
  return new Promise<Exchange>((resolve, reject) => {
    const disarm = armHeadDeadline(req, url, outgoing.headersTimeoutMs, signal);
    const settle = () => {
      disarm();
      errors.route(ignore);
    };
    errors.route((err) => {
      settle();
      req.destroy();
      reject(headerError(err, url, outgoing.action, signal));
    });
    req.on('response', (res: IncomingMessage) => {
      settle();
      resolve(exchangeOf(url, req, res, errors, () => rawBodyBytes()));
    });
    req.end(outgoing.body);
  });
}

function openRequest(url: URL, outgoing: Outgoing, pinned: LookupAddress[], userAgent: string): ClientRequest {
  const { method, headers, body } = outgoing;
  const host = hostName(url);
  return (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method,
    // No agent: no pooled connection outlives the fetch or is shared with a hop to another address.
    agent: false,
    headers: {
      'user-agent': userAgent,
      ...headers,
      ...(body === undefined ? {} : { 'content-length': String(body.length) }),
      connection: 'close',
    },
    lookup: pinnedLookup(pinned),
    // TLS checks the certificate against the URL's name, not the pinned address; SNI never carries an IP.
    ...(isIP(host) === 0 ? { servername: host } : {}),
  });
}

/** Ends the request when its head is late or the caller aborts; returns what disarms both. */
function armHeadDeadline(req: ClientRequest, url: URL, ms: number | undefined, signal?: AbortSignal): () => void {
  const deadline = ms === undefined ? undefined : setTimeout(() => req.destroy(noAnswerWithin(url, ms)), ms);
  const onAbort = () => req.destroy(abortReason(signal!));
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
  return () => {
    clearTimeout(deadline);
    signal?.removeEventListener('abort', onAbort);
  };
}

function exchangeOf(
  url: URL,
  req: ClientRequest,
  res: IncomingMessage,
  errors: ErrorRoute,
  rawBodyBytes: () => number | undefined,
): Exchange {
  // Kept until the caller takes over, which is a few ticks later.
  const handOver = errors.hold();
  res.on('error', errors.emit);
  return {
    url,
    res,
    onError: handOver,
    close() {
      errors.route(ignore);
      req.destroy();
    },
    rawBodyBytes,
  };
}

const ignore = () => undefined;

type ErrorRoute = ReturnType<typeof createErrorRoute>;

/** Sends a request's errors, whenever Node emits them, to whoever handles them at that moment. */
function createErrorRoute() {
  let handler: (err: unknown) => void = ignore;
  return {
    emit: (err: unknown) => handler(err),
    route(to: (err: unknown) => void) {
      handler = to;
    },
    /** Keeps the first error until the returned hand-over names a handler, which then gets it at once. */
    hold(): (to: (err: unknown) => void) => void {
      let pending: unknown;
      handler = (err) => (pending ??= err);
      return (to) => {
        handler = to;
        if (pending !== undefined) to(pending);
      };
    },
  };
}

/**
 * Counts what the server sends after its final head. Node's parser silently drops bytes past the
 * declared Content-Length, yet they mean the length was wrong and the file may be cut short. Only
 * the framing is read here; a head without CRLF CRLF is never found, so nothing is counted.
 */
function countRawBody(socket: Socket): () => number | undefined {
  let head = Buffer.alloc(0);
  let body: number | undefined;
  // Prepended, so it sees each chunk before Node's parser can end the response with it.
  socket.prependListener('data', (chunk: Buffer) => {
    if (body !== undefined) {
      body += chunk.length;
      return;
    }
    head = Buffer.concat([head, chunk]);
    for (let end = head.indexOf('\r\n\r\n'); end >= 0 && body === undefined; end = head.indexOf('\r\n\r\n')) {
      const informational = /^HTTP\/1\.[01] 1\d\d/.test(head.subarray(0, 12).toString('latin1'));
      head = head.subarray(end + 4);
      if (!informational) body = head.length;
    }
  });
  return () => body;
}
