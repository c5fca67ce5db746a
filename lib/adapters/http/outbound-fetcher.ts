import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import { Agent, request, type Dispatcher } from 'undici';
import type { FetchedBody, OutboundFetcher } from '../../ports/outbound';

export type OutboundErrorReason = 'blocked_address' | 'bad_url' | 'bad_status' | 'too_many_redirects' | 'timeout' | 'network';

/** A refused or failed outbound fetch; the message names the host and the reason, fit for an API user. */
export class OutboundError extends Error {
  constructor(
    readonly reason: OutboundErrorReason,
    message: string,
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
    if (entry.includes('/')) {
      if (!ipaddr.IPv4.isValidCIDRFourPartDecimal(entry) && !ipaddr.IPv6.isValidCIDR(entry)) throw badEntry(entry);
      ranges.push(ipaddr.parseCIDR(entry));
    } else if (ipaddr.IPv4.isValidFourPartDecimal(entry) || ipaddr.IPv6.isValid(entry)) {
      const ip = ipaddr.parse(entry);
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
      exactAddresses.add(ipaddr.process(entry).toString());
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

/** True when `address` is public unicast, or allow-listed. IPv4-mapped IPv6 is judged as its IPv4. */
export function isAddressAllowed(address: string, allowlist: ParsedAllowlist): boolean {
  if (!ipaddr.isValid(address)) return false;
  const candidates = [ipaddr.parse(address), ipaddr.process(address)];
  const canonical = candidates[1].toString();
  if (METADATA_ADDRESSES.has(canonical)) return allowlist.exactAddresses.has(canonical);
  const listed = candidates.some((ip) => allowlist.ranges.some(([net, bits]) => ip.kind() === net.kind() && ip.match(net, bits)));
  // Anything but plain unicast (private, reserved, 6to4, NAT64, ...) may lead inside the network.
  return listed || candidates[1].range() === 'unicast';
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
  if (ipaddr.isValid(host) && !isAddressAllowed(host, allowlist)) {
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
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** OutboundFetcher on undici: each hop is checked, then its connection is pinned to the checked address. */
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
        const { response, agent } = await fetchHop(current, hopHeaders, settings, signal);
        const location = REDIRECTS.has(response.statusCode) ? header(response.headers.location) : undefined;
        if (location === undefined) return finish(current, response, agent, signal);
        await discard(response, agent);
        if (hop >= limit) throw new OutboundError('too_many_redirects', `${current.host} redirected more than ${limit} times`);
        const next = parseUrl(location, current);
        // Like browsers: credentials meant for one origin are not forwarded to another.
        if (next.origin !== current.origin) hopHeaders = withoutCredentials(hopHeaders);
        current = next;
      }
    },
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

async function fetchHop(url: URL, headers: Record<string, string>, settings: Settings, signal?: AbortSignal) {
  const pinned = await checkedAddresses(url.hostname.replace(/^\[|\]$/g, ''), settings, signal);
  const agent = pinnedAgent(pinned, settings);
  try {
    const response = await request(url, { dispatcher: agent, headers: { 'user-agent': settings.userAgent, ...headers }, signal });
    return { response, agent };
  } catch (err) {
    void agent.destroy().catch(() => undefined);
    throw toOutboundError(err, url, signal);
  }
}

/** Resolves every address of the host and refuses the hop if any of them is internal. */
async function checkedAddresses(host: string, settings: Settings, signal?: AbortSignal): Promise<LookupAddress[]> {
  const family = isIP(host);
  const addresses = family !== 0 ? [{ address: host, family }] : await resolveAll(host, settings.headersTimeoutMs, signal);
  const { allowlist } = settings;
  if (!isHostAllowed(host, allowlist) && addresses.some((a) => !isAddressAllowed(a.address, allowlist))) {
    throw new OutboundError('blocked_address', `refused to fetch from ${host}: it resolves to an internal (private or loopback) address`);
  }
  return addresses;
}

async function resolveAll(host: string, timeoutMs: number, signal?: AbortSignal): Promise<LookupAddress[]> {
  const deadline = AbortSignal.timeout(timeoutMs);
  const either = signal ? AbortSignal.any([signal, deadline]) : deadline;
  try {
    const addresses = await abortable(lookup(host, { all: true, verbatim: true }), either);
    if (addresses.length > 0) return addresses;
  } catch (err) {
    if (signal?.aborted) throw err;
    if (deadline.aborted) throw new OutboundError('timeout', `resolving ${host} took too long`);
  }
  throw new OutboundError('network', `could not resolve host ${host}`);
}

/** getaddrinfo cannot be cancelled; this stops waiting for it. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * An agent that can only connect to the addresses already checked, so a DNS answer that changes
 * between the check and the connect (rebinding) is never used. All checked addresses are offered
 * so Node's happy-eyeballs can still fall back from IPv6 to IPv4. TLS still gets the URL's host
 * name for SNI and certificate checks, because undici passes it as `servername`.
 */
function pinnedAgent(pinned: LookupAddress[], settings: Settings): Agent {
  const lookupPinned: LookupFunction = (_host, opts, callback) => {
    const family = opts.family === 4 || opts.family === 6 ? opts.family : undefined;
    const usable = family ? pinned.filter((a) => a.family === family) : pinned;
    if (usable.length === 0) callback(Object.assign(new Error('no checked address of the wanted family'), { code: 'ENOTFOUND' }), '');
    else if (opts.all) callback(null, usable);
    else callback(null, usable[0].address, usable[0].family);
  };
  return new Agent({
    headersTimeout: settings.headersTimeoutMs,
    bodyTimeout: settings.bodyTimeoutMs,
    connect: { lookup: lookupPinned, timeout: settings.headersTimeoutMs },
  });
}

async function finish(url: URL, response: Dispatcher.ResponseData, agent: Agent, signal?: AbortSignal): Promise<FetchedBody> {
  if (response.statusCode < 200 || response.statusCode > 299) {
    await discard(response, agent);
    throw new OutboundError('bad_status', `${url.host} answered HTTP ${response.statusCode}`);
  }
  const length = Number(header(response.headers['content-length']));
  return {
    status: response.statusCode,
    contentType: header(response.headers['content-type']),
    contentLength: Number.isSafeInteger(length) && length >= 0 ? length : undefined,
    finalUrl: url.toString(),
    body: exposeBody(response.body, agent, url, signal),
  };
}

/** Re-raises body errors as OutboundErrors and closes the hop's agent once the body is done. */
function exposeBody(body: Readable, agent: Agent, url: URL, signal?: AbortSignal): Readable {
  const out = new PassThrough();
  body.on('error', (err) => out.destroy(toOutboundError(err, url, signal)));
  out.on('close', () => {
    body.destroy();
    void agent.destroy().catch(() => undefined);
  });
  return body.pipe(out);
}

async function discard(response: Dispatcher.ResponseData, agent: Agent): Promise<void> {
  // Destroying an unread undici body emits an abort error; nobody is waiting for it.
  response.body.on('error', () => undefined).destroy();
  await agent.destroy().catch(() => undefined);
}

function toOutboundError(err: unknown, url: URL, signal?: AbortSignal): Error {
  // Cancellation is the caller's own doing: hand back its reason untouched.
  if (err instanceof OutboundError || (signal?.aborted && err instanceof Error)) return err;
  if (signal?.aborted) return new DOMException('the fetch was aborted', 'AbortError');
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return new OutboundError('timeout', `${url.host} did not answer in time`);
  return new OutboundError('network', `could not fetch from ${url.host}${typeof code === 'string' ? ` (${code})` : ''}`);
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !/^(authorization|cookie|proxy-authorization)$/i.test(name)));
}
