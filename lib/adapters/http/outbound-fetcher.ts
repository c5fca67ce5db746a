import { OutboundError } from '../../domain/errors';
import type { FetchedBody, GetOptions, OutboundFetcher } from '../../ports/outbound';
import { parseAllowlist } from './outbound/allowlist';
import { acceptedBody } from './outbound/body-stream';
import { fetchHop, parseUrl, type Outgoing, type Settings } from './outbound/exchange';
import { post } from './outbound/post';

export { isAddressAllowed, literalRefusal, parseAllowlist, parseHostAllowList, type ParsedAllowlist } from './outbound/allowlist';
export { OutboundError, type OutboundErrorReason } from '../../domain/errors';

/**
 * The outbound fetcher: GET with redirects for media URLs, POST for webhooks, both behind the
 * address guard. The pieces are in `./outbound/`: the allow list (`allowlist`), the checked and
 * pinned DNS look-up (`pinned-dns`), one request and its answer's head (`exchange`), a GET's body
 * (`body-stream`), a POST (`post`), and what their failures say (`errors`).
 */

export interface OutboundFetcherOptions {
  allowlist: string[];
  maxRedirects?: number;
  userAgent?: string;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * OutboundFetcher on `node:http`: each hop is checked, then its connection is pinned to the
 * checked addresses. Not undici: undici 7 turns a server closing right after the body into an
 * uncaught exception that ends the process (nodejs/undici#5360), and the fix needs Node 22.
 */
export function createOutboundFetcher(options: OutboundFetcherOptions): OutboundFetcher {
  const maxRedirects = options.maxRedirects ?? 5;
  const settings: Settings = {
    allowlist: parseAllowlist(options.allowlist),
    userAgent: options.userAgent ?? 'media-project-service',
    headersTimeoutMs: options.headersTimeoutMs ?? 30_000,
    bodyTimeoutMs: options.bodyTimeoutMs ?? 60_000,
  };
  return {
    get: (url, getOptions) => getFollowingRedirects(url, maxRedirects, settings, getOptions),
    post: (url, postOptions) => post(url, postOptions, settings),
  };
}

/** Follows at most `limit` redirects; the address guard checks every hop afresh. */
async function getFollowingRedirects(
  url: string,
  limit: number,
  settings: Settings,
  { signal, headers = {} }: GetOptions = {},
): Promise<FetchedBody> {
  let current = parseUrl(url);
  let hopHeaders = headers;
  for (let hop = 0; ; hop++) {
    const outgoing: Outgoing = { method: 'GET', headers: hopHeaders, action: 'fetch from', headersTimeoutMs: settings.headersTimeoutMs };
    const exchange = await fetchHop(current, outgoing, settings, signal);
    const status = exchange.res.statusCode ?? 0;
    const location = REDIRECTS.has(status) ? exchange.res.headers.location : undefined;
    if (location === undefined) return acceptedBody(exchange, settings.bodyTimeoutMs, signal);
    exchange.close();
    if (hop >= limit) throw new OutboundError('too_many_redirects', `${current.host} redirected more than ${limit} times`);
    const next = parseUrl(location, current);
    // Like browsers: credentials meant for one origin are not forwarded to another.
    if (next.origin !== current.origin) hopHeaders = withoutCredentials(hopHeaders);
    current = next;
  }
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !/^(authorization|cookie|proxy-authorization)$/i.test(name)));
}
