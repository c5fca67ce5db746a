import type { Context } from 'koa';

/**
 * The address a request came from, for per-address limits. `X-Forwarded-For` is written by
 * whoever sends the request, so only the entries our own proxies appended are believed: with
 * `trustedProxyHops` proxies in front (the compose file's nginx gateway is one), the client is
 * the entry that many places from the right, counting the socket's peer as the last one. With
 * none, the socket's peer: a header a client made up must not give it a fresh limit per request
 * (Koa's `ctx.ip` under `app.proxy` believes the leftmost entry, which the client chose).
 */
export function clientAddress(ctx: Pick<Context, 'get' | 'req'>, trustedProxyHops = 0): string {
  const peer = ctx.req.socket.remoteAddress ?? 'unknown';
  if (trustedProxyHops <= 0) return peer;
  const forwarded = ctx
    .get('x-forwarded-for')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const chain = [...forwarded, peer];
  // Fewer entries than proxies: the request did not come through them all; the leftmost is all we have.
  return chain[Math.max(0, chain.length - 1 - trustedProxyHops)];
}
