import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import type { FetchedBody, OutboundFetcher, PostAnswer, PostOptions } from '../../ports/outbound';

export type OutboundErrorReason = 'blocked_address' | 'bad_url' | 'bad_status' | 'too_many_redirects' | 'timeout' | 'network';

/** A refused or failed outbound fetch; the message names the host and the reason, fit for an API user. */
export class OutboundError extends Error {
  constructor(
    readonly reason: OutboundErrorReason,
    message: string,
    /** The server's status, for `bad_status`. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

// ---- allowlist -------------------------------------------------------------------------------

type Ip = ipaddr.IPv4 | ipaddr.IPv6;

export interface ParsedAllowlist {
  readonly hosts: ReadonlySet<string>;
  /** From `*.example.com` entries, stored as `.example.com`. */
  readonly domainSuffixes: readonly string[];
  readonly ranges: readonly (readonly [Ip, number])[];
  /** Exact IP entries: the only way (besides a host name) to reach a cloud metadata address. */
  readonly exactAddresses: ReadonlySet<string>;
}

const HOST_NAME = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// Listed apart from their ranges so that allow-listing a whole link-local or ULA range does not expose them.
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254']);

/** Parses OUTBOUND_ALLOWLIST entries: host names (`*.` for subdomains), IP addresses or CIDRs. */
export function parseAllowlist(entries: string[]): ParsedAllowlist {
  const hosts = new Set<string>();
  const domainSuffixes: string[] = [];
  const ranges: (readonly [Ip, number])[] = [];
  const exactAddresses = new Set<string>();
  for (const entry of entries.map((e) => e.trim().toLowerCase()).filter((e) => e !== '')) {
    const ip = parseIp(entry.split('/')[0]);
    if (entry.includes('/')) {
      const [, bits, ...rest] = entry.split('/');
      if (!ip || rest.length > 0 || !/^[0-9]{1,3}$/.test(bits) || Number(bits) > (ip.kind() === 'ipv4' ? 32 : 128)) throw badEntry(entry);
      ranges.push([ip, Number(bits)]);
    } else if (ip) {
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
      exactAddresses.add(unmapped(ip).toString());
    } else if (HOST_NAME.test(entry) && !/^[0-9]+$/.test(entry.split('.').pop() ?? '')) {
      if (entry.startsWith('*.')) domainSuffixes.push(entry.slice(1));
      else hosts.add(entry);
    } else {
      throw badEntry(entry);
    }
  }
  return { hosts, domainSuffixes, ranges, exactAddresses };
}

const badEntry = (entry: string) => new Error(`invalid allowlist entry "${entry}": expected a host name, an IP address or a CIDR range`);

/**
 * IPv6 ranges that carry an IPv4 address: IPv4-compatible, SIIT, NAT64 (well-known and local),
 * Teredo, 6to4. Where a packet to one of them lands depends on a translator, a relay or the host's
 * own tunnels, not on the address, so neither the IPv6 nor the embedded IPv4 can be judged: they
 * are refused unless an IPv6 entry of the allowlist covers them. IPv4-mapped addresses
 * (::ffff:0:0/96) are not among them: a socket connects to exactly their IPv4, so they are judged as it.
 */
const EMBEDS_IPV4 = ['::/96', '::ffff:0:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '2001::/32', '2002::/16'].map((cidr) =>
  ipaddr.IPv6.parseCIDR(cidr),
);

/**
 * Parses an address as Node writes and connects to it. ipaddr.js alone reads `::1.2.3.4`
 * (IPv4-compatible) as `::ffff:1.2.3.4` (IPv4-mapped), so IPv6 first goes through the WHATWG URL
 * serializer, which writes hex only; zone ids (`%eth0`) are not addresses a URL can name.
 */
function parseIp(text: string): Ip | null {
  const family = isIP(text);
  if (family === 4) return ipaddr.IPv4.parse(text);
  if (family !== 6) return null;
  try {
    return ipaddr.IPv6.parse(new URL(`http://[${text}]/`).hostname.slice(1, -1));
  } catch {
    return null;
  }
}

const unmapped = (ip: Ip): Ip => (ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress() ? ip.toIPv4Address() : ip);

/** True when `address` is public unicast, or allow-listed. IPv4-mapped IPv6 is judged as its IPv4. */
export function isAddressAllowed(address: string, allowlist: ParsedAllowlist): boolean {
  const ip = parseIp(address);
  if (!ip) return false;
  const judged = unmapped(ip);
  const canonical = judged.toString();
  if (METADATA_ADDRESSES.has(canonical)) return allowlist.exactAddresses.has(canonical);
  const listed = [ip, judged].some((x) => allowlist.ranges.some(([net, bits]) => x.kind() === net.kind() && x.match(net, bits)));
  if (listed) return true;
  if (judged instanceof ipaddr.IPv6 && EMBEDS_IPV4.some(([net, bits]) => judged.match(net, bits))) return false;
  // Anything but plain unicast (private, reserved, multicast, ...) may lead inside the network.
  return judged.range() === 'unicast';
}

/** `host` comes from a WHATWG URL, so it is already lower-case and punycoded. */
function isHostAllowed(host: string, allowlist: ParsedAllowlist): boolean {
  return allowlist.hosts.has(host) || allowlist.domainSuffixes.some((suffix) => host.endsWith(suffix));
}

/**
 * What can be refused from a URL alone, before any DNS look-up: a host that is a literal
 * internal address, or localhost. The API answers these with 400 at once; names that resolve
 * inward are refused when fetched.
 */
export function literalRefusal(rawUrl: string, allowlist: ParsedAllowlist): string | null {
  let host: string;
  try {
    host = new URL(rawUrl).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return 'is not a URL';
  }
  if (isHostAllowed(host, allowlist)) return null;
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} is a loopback host; only public addresses can be fetched`;
  if (isIP(host) !== 0 && !isAddressAllowed(host, allowlist)) {
    return `${host} is an internal (loopback, private or link-local) address; only public addresses can be fetched`;
  }
  return null;
}

// ---- fetcher ---------------------------------------------------------------------------------

export interface OutboundFetcherOptions {
  allowlist: string[];
  maxRedirects?: number;
  userAgent?: string;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
}
type Settings = Required<Omit<OutboundFetcherOptions, 'allowlist' | 'maxRedirects'>> & { allowlist: ParsedAllowlist };
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const POST_TIMEOUT_MS = 15_000;
/** What of a POST's answer is read before the connection is closed: enough for any acknowledgement. */
const POST_ANSWER_CAP = 64 * 1024;
/** setTimeout fires at once past this, so a longer deadline would be no deadline. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How a request is phrased: the method, what it sends, and the verb its error messages use. */
interface Outgoing {
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  readonly body?: Buffer;
  readonly action: 'fetch from' | 'post to';
  /** Own deadline for the answer's head; without one the caller's signal is the only limit. */
  readonly headersTimeoutMs?: number;
}

/**
 * OutboundFetcher on `node:http`: each hop is checked, then its connection is pinned to the
 * checked addresses. Not undici: undici 7 turns a server closing right after the body into an
 * uncaught exception that ends the process (nodejs/undici#5360), and the fix needs Node 22.
 */
export function createOutboundFetcher(options: OutboundFetcherOptions): OutboundFetcher {
  const limit = options.maxRedirects ?? 5;
  const settings: Settings = {
    allowlist: parseAllowlist(options.allowlist),
    userAgent: options.userAgent ?? 'media-project-service',
    headersTimeoutMs: options.headersTimeoutMs ?? 30_000,
    bodyTimeoutMs: options.bodyTimeoutMs ?? 60_000,
  };
  return {
    async get(url, { signal, headers = {} } = {}) {
      let current = parseUrl(url);
      let hopHeaders = headers;
      for (let hop = 0; ; hop++) {
        const outgoing: Outgoing = {
          method: 'GET',
          headers: hopHeaders,
          action: 'fetch from',
          headersTimeoutMs: settings.headersTimeoutMs,
        };
        const exchange = await fetchHop(current, outgoing, settings, signal);
        const status = exchange.res.statusCode ?? 0;
        const location = REDIRECTS.has(status) ? exchange.res.headers.location : undefined;
        if (location === undefined) return finish(exchange, settings, signal);
        exchange.close();
        if (hop >= limit) throw new OutboundError('too_many_redirects', `${current.host} redirected more than ${limit} times`);
        const next = parseUrl(location, current);
        // Like browsers: credentials meant for one origin are not forwarded to another.
        if (next.origin !== current.origin) hopHeaders = withoutCredentials(hopHeaders);
        current = next;
      }
    },
    post: (url, options) => post(url, options, settings),
  };
}

function parseUrl(raw: string, base?: URL): URL {
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

async function fetchHop(url: URL, outgoing: Outgoing, settings: Settings, signal?: AbortSignal): Promise<Exchange> {
  if (signal?.aborted) throw abortReason(signal);
  const pinned = await checkedAddresses(hostName(url), settings, outgoing.action, signal);
  // Checked again: an abort during the look-up must not open a connection.
  if (signal?.aborted) throw abortReason(signal);
  return sendRequest(url, outgoing, pinned, settings, signal);
}

/** Resolves every address of the host and refuses the hop if any of them is internal. */
async function checkedAddresses(
  host: string,
  settings: Settings,
  action: Outgoing['action'],
  signal?: AbortSignal,
): Promise<LookupAddress[]> {
  const family = isIP(host);
  const addresses = family !== 0 ? [{ address: host, family }] : await resolveAll(host, settings.headersTimeoutMs, signal);
  const { allowlist } = settings;
  if (!isHostAllowed(host, allowlist) && addresses.some((a) => !isAddressAllowed(a.address, allowlist))) {
    throw new OutboundError('blocked_address', `refused to ${action} ${host}: it resolves to an internal (private or loopback) address`);
  }
  return addresses;
}

async function resolveAll(host: string, timeoutMs: number, signal?: AbortSignal): Promise<LookupAddress[]> {
  let addresses: LookupAddress[] = [];
  try {
    addresses = await within(lookup(host, { all: true, verbatim: true }), timeoutMs, `resolving ${host} timed out`, signal);
  } catch (err) {
    if (signal?.aborted || err instanceof OutboundError) throw err;
  }
  if (addresses.length === 0) throw new OutboundError('network', `could not resolve host ${host}`);
  return addresses;
}

/** getaddrinfo cannot be cancelled; this stops waiting for it at the deadline or on abort. */
function within<T>(promise: Promise<T>, ms: number, timeoutMessage: string, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new OutboundError('timeout', timeoutMessage)), ms);
    const onAbort = () => reject(abortReason(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    promise.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
  });
}

/**
 * A lookup that only ever answers with the addresses already checked, so a DNS answer that
 * changes between the check and the connect (rebinding) is never used. All of them are offered
 * so Node's happy-eyeballs can still fall back from IPv6 to IPv4.
 */
function pinnedLookup(pinned: LookupAddress[]): LookupFunction {
  return (_host, opts, callback) => {
    const family = opts.family === 4 || opts.family === 6 ? opts.family : undefined;
    const usable = family ? pinned.filter((a) => a.family === family) : pinned;
    if (usable.length === 0) callback(Object.assign(new Error('no checked address of the wanted family'), { code: 'ENOTFOUND' }), '');
    else if (opts.all) callback(null, usable);
    else callback(null, usable[0].address, usable[0].family);
  };
}

/** One request on a connection of its own, answered as far as its headers. */
interface Exchange {
  readonly url: URL;
  readonly res: IncomingMessage;
  /** Where the exchange's later errors go: Node can emit them at any time, even after the body ended. */
  onError(handler: (err: unknown) => void): void;
  /** Closes the connection; later errors are dropped. */
  close(): void;
  /** Bytes that arrived after the final head, as sent (undefined until the head is complete). */
  rawBodyBytes(): number | undefined;
}

const ignore = () => undefined;

function sendRequest(url: URL, outgoing: Outgoing, pinned: LookupAddress[], settings: Settings, signal?: AbortSignal): Promise<Exchange> {
  const host = hostName(url);
  const { method, headers, body, headersTimeoutMs } = outgoing;
  const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method,
    // No agent: no pooled connection outlives the fetch or is shared with a hop to another address.
    agent: false,
    headers: {
      'user-agent': settings.userAgent,
      ...headers,
      ...(body === undefined ? {} : { 'content-length': String(body.length) }),
      connection: 'close',
    },
    lookup: pinnedLookup(pinned),
    // TLS checks the certificate against the URL's name, not the pinned address; SNI never carries an IP.
    ...(isIP(host) === 0 ? { servername: host } : {}),
  });
  let handler: (err: unknown) => void = ignore;
  // Permanent: an 'error' with no listener would be an uncaught exception.
  req.on('error', (err) => handler(err));
  let rawBodyBytes: () => number | undefined = () => undefined;
  req.on('socket', (socket) => (rawBodyBytes = countRawBody(socket)));
  return new Promise<Exchange>((resolve, reject) => {
    const deadline =
      headersTimeoutMs === undefined
        ? undefined
        : setTimeout(
            () => req.destroy(new OutboundError('timeout', `${url.host} timed out: no answer within ${headersTimeoutMs / 1000} s`)),
            headersTimeoutMs,
          );
    const onAbort = () => req.destroy(abortReason(signal!));
    const settle = () => {
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      handler = ignore;
    };
    handler = (err) => {
      settle();
      req.destroy();
      reject(headerError(err, url, outgoing.action, signal));
    };
    req.on('response', (res: IncomingMessage) => {
      settle();
      // Kept until the caller takes over, which is a few ticks later.
      let pending: unknown;
      handler = (err) => (pending ??= err);
      res.on('error', (err) => handler(err));
      resolve({
        url,
        res,
        onError(h) {
          handler = h;
          if (pending !== undefined) h(pending);
        },
        close() {
          handler = ignore;
          req.destroy();
        },
        rawBodyBytes: () => rawBodyBytes(),
      });
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    req.end(body);
  });
}

function finish(exchange: Exchange, settings: Settings, signal?: AbortSignal): FetchedBody {
  const { res, url } = exchange;
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    exchange.close();
    throw new OutboundError('bad_status', `${url.host} answered HTTP ${status}`, status);
  }
  const length = Number(res.headers['content-length']);
  const declared = res.headers['content-length'] !== undefined && Number.isSafeInteger(length) && length >= 0 ? length : undefined;
  return {
    status,
    contentType: res.headers['content-type'],
    contentLength: declared,
    finalUrl: url.toString(),
    body: streamBody(exchange, declared, settings.bodyTimeoutMs, signal),
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

/**
 * The body as a stream that ends only once every declared byte arrived. Any other end (reset,
 * early close, malformed bytes, a stall of `idleMs`, the caller's abort) errors it instead, and
 * its close closes the connection.
 */
function streamBody(exchange: Exchange, declared: number | undefined, idleMs: number, signal?: AbortSignal): Readable {
  const { res, url } = exchange;
  const out = new PassThrough();
  let received = 0;
  let idle: NodeJS.Timeout | undefined;
  const stop = (err: Error) => {
    clearTimeout(idle);
    out.destroy(err);
  };
  // Only armed while waiting on the server: a reader that holds back is not a stalled server.
  const arm = () => {
    clearTimeout(idle);
    if (res.complete) return;
    idle = setTimeout(() => stop(new OutboundError('timeout', `${url.host} timed out: nothing received for ${idleMs / 1000} s`)), idleMs);
  };
  const onAbort = () => stop(abortReason(signal!));

  // Once every byte has arrived the connection no longer matters: a reset after the body is common.
  exchange.onError((err) => {
    if (!res.complete) stop(bodyError(err, url, { received, declared }, signal));
  });
  res.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (out.write(chunk)) return arm();
    clearTimeout(idle);
    res.pause();
  });
  out.on('drain', () => {
    arm();
    res.resume();
  });
  res.on('end', () => {
    const framedByLength = declared !== undefined && res.headers['transfer-encoding'] === undefined;
    if (framedByLength && (exchange.rawBodyBytes() ?? 0) > declared) {
      return stop(new OutboundError('network', `${url.host} sent more bytes than the ${declared} its Content-Length declared`));
    }
    clearTimeout(idle);
    out.end();
  });
  out.on('close', () => {
    clearTimeout(idle);
    signal?.removeEventListener('abort', onAbort);
    exchange.close();
  });
  arm();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
  return out;
}

// ---- post ----------------------------------------------------------------------------------

/**
 * One POST under one deadline (see the port's JSDoc). The address guard runs on every call, so an
 * allow list or a DNS answer that changed since the last delivery is honoured.
 */
async function post(rawUrl: string, options: PostOptions, settings: Settings): Promise<PostAnswer> {
  const { body, headers = {}, timeoutMs = POST_TIMEOUT_MS, signal } = options;
  if (!(timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS)) throw new RangeError(`timeoutMs must be between 1 and ${MAX_TIMER_MS}`);
  const started = performance.now();
  const url = parseUrl(rawUrl);
  const deadline = startDeadline(url, timeoutMs, signal);
  try {
    const outgoing: Outgoing = {
      method: 'POST',
      headers: withoutFraming(headers),
      body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
      action: 'post to',
    };
    const exchange = await fetchHop(url, outgoing, settings, deadline.signal);
    const status = exchange.res.statusCode ?? 0;
    deadline.answered(status);
    await drainAnswer(exchange, status, deadline.signal);
    return { status, durationMs: Math.round(performance.now() - started) };
  } finally {
    deadline.clear();
  }
}

/**
 * The whole exchange's deadline as an abort, so every step (look-up, connect, send, answer) stops
 * on it the same way. A plain timer keeps the controller alive: Node 20 can collect an
 * `AbortSignal.timeout` that nothing else references before it fires.
 */
function startDeadline(url: URL, timeoutMs: number, caller?: AbortSignal) {
  const controller = new AbortController();
  let status: number | undefined;
  const seconds = timeoutMs / 1000;
  const timer = setTimeout(() => {
    const message =
      status === undefined
        ? `${url.host} timed out: no answer within ${seconds} s`
        : `${url.host} timed out: its answer (HTTP ${status}) did not end within ${seconds} s`;
    controller.abort(new OutboundError('timeout', message));
  }, timeoutMs);
  // The caller's abort goes through untouched, as for `get`.
  const forward = () => controller.abort(abortReason(caller!));
  caller?.addEventListener('abort', forward, { once: true });
  if (caller?.aborted) forward();
  return {
    signal: controller.signal,
    answered: (s: number) => (status = s),
    clear() {
      clearTimeout(timer);
      caller?.removeEventListener('abort', forward);
    },
  };
}

/**
 * Reads the answer's body to its end or to POST_ANSWER_CAP, then closes the connection. A body that
 * ends in a reset or an early close rejects: the answer did not arrive whole, so neither did the
 * acknowledgement it carried.
 */
function drainAnswer(exchange: Exchange, status: number, signal: AbortSignal): Promise<void> {
  const { res, url } = exchange;
  return new Promise<void>((resolve, reject) => {
    let received = 0;
    const settle = (err?: Error) => {
      signal.removeEventListener('abort', onAbort);
      exchange.close();
      if (err) reject(err);
      else resolve();
    };
    const onAbort = () => settle(abortReason(signal));
    // Once the answer is complete the connection no longer matters: a reset after it is common.
    exchange.onError((err) => {
      if (!res.complete) settle(answerError(err, url, status, received, signal));
    });
    res.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received >= POST_ANSWER_CAP) settle();
    });
    res.on('end', () => settle());
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
  });
}

function answerError(err: unknown, url: URL, status: number, received: number, signal: AbortSignal): Error {
  if (signal.aborted) return abortReason(signal);
  if (err instanceof OutboundError) return err;
  const code = codeOf(err);
  const after = `after ${received} bytes`;
  if (code?.startsWith('HPE_')) return new OutboundError('network', `${url.host} sent a malformed answer (${code}) ${after}`);
  return new OutboundError(
    'network',
    `${url.host} ${isReset(err) ? 'reset' : 'closed'} the connection during its answer (HTTP ${status}) ${after}`,
  );
}

/** The fetcher frames the body itself; a caller's framing headers could only contradict it. */
function withoutFraming(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !/^(content-length|transfer-encoding|connection)$/i.test(name)));
}

// ---- errors ----------------------------------------------------------------------------------
// Messages name the host and what went wrong in words; Node's own messages are not passed on.

/** Cancellation is the caller's own doing: its reason goes back untouched. */
function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('the fetch was aborted', 'AbortError');
}

const codeOf = (err: unknown) => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};
// A reset arrives as a socket read error; a close before the end as Node's own ECONNRESET without a syscall.
const isReset = (err: unknown) => codeOf(err) === 'ECONNRESET' && (err as { syscall?: unknown }).syscall !== undefined;
// OpenSSL's protocol errors come as EPROTO; certificate checks as their X.509 names.
const TLS_FAILURE = /^EPROTO$|^ERR_(SSL|TLS)_|CERT|SIGNATURE|ISSUER/;

function headerError(err: unknown, url: URL, action: Outgoing['action'], signal?: AbortSignal): Error {
  if (signal?.aborted) return abortReason(signal);
  if (err instanceof OutboundError) return err;
  const code = codeOf(err);
  const host = url.host;
  if (isReset(err)) return new OutboundError('network', `${host} reset the connection before answering`);
  if (code === 'ECONNRESET') return new OutboundError('network', `${host} closed the connection without answering`);
  // Only a request with a body can be cut off while it is still being written.
  if (code === 'EPIPE') return new OutboundError('network', `${host} closed the connection before the request was sent`);
  if (code?.startsWith('HPE_')) return new OutboundError('network', `${host} did not answer with valid HTTP (${code})`);
  if (code === 'ECONNREFUSED') return new OutboundError('network', `could not connect to ${host}: connection refused`);
  if (url.protocol === 'https:' && code && TLS_FAILURE.test(code)) {
    return new OutboundError('network', `the TLS handshake with ${host} failed (${code})`);
  }
  return new OutboundError('network', `could not ${action} ${host}${code ? ` (${code})` : ''}`);
}

function bodyError(err: unknown, url: URL, progress: { received: number; declared: number | undefined }, signal?: AbortSignal): Error {
  if (signal?.aborted) return abortReason(signal);
  if (err instanceof OutboundError) return err;
  const { received, declared } = progress;
  const host = url.host;
  const after = `after ${received}${declared === undefined ? '' : ` of ${declared}`} bytes`;
  const code = codeOf(err);
  if (isReset(err)) return new OutboundError('network', `${host} reset the connection ${after}`);
  if (code?.startsWith('HPE_')) return new OutboundError('network', `${host} sent a malformed response body (${code}) ${after}`);
  if (code === 'ECONNRESET' || (declared !== undefined && received < declared)) {
    return new OutboundError('network', `${host} closed the connection ${after}`);
  }
  return new OutboundError('network', `the download from ${host} failed ${after}${code ? ` (${code})` : ''}`);
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !/^(authorization|cookie|proxy-authorization)$/i.test(name)));
}
