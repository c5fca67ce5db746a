import { LRUCache } from 'lru-cache';
import { AppError } from '../domain/errors';
import { streams } from '../domain/ids';
import { mediaSecondsAllowance, driveDecider, tokenDecider } from '../domain/tenancy';
import type { Clock } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import { commandHandler } from './command-handler';
import { hashToken, tokenIdOf, tokenMatches } from './tokens';

export type Principal = {
  driveId: string;
  driveName: string;
  userId: string;
  /** The user's names from the token (empty when the operator gave none): a publish's `published_by`. */
  firstName: string;
  lastName: string;
  tokenId: string;
  /** The drive's media-seconds allowance when the token was checked (null: unlimited). */
  mediaSecondsAllowance: number | null;
};

/** Resolves an `Authorization` header to its principal, or throws `unauthorized`. */
export type Authenticate = (authorization: string | undefined) => Promise<Principal>;

/**
 * The principal of a token by its id, read from the token and drive streams each time, or null
 * when the token is unknown, revoked, or its drive is gone. `secretMatches` checks the stored
 * hash when the caller holds the token itself; a web session holds only the id (lib/app/web-sessions.ts).
 */
export function principalsByTokenId(
  store: EventStore,
): (tokenId: string, secretMatches?: (secretHash: string) => boolean) => Promise<Principal | null> {
  const tokens = commandHandler(store, tokenDecider, streams.token);
  const drives = commandHandler(store, driveDecider, streams.drive);
  return async (tokenId, secretMatches = () => true) => {
    const { state: t } = await tokens.load(tokenId);
    if (!t.exists || t.revoked || !secretMatches(t.token.secret_hash)) return null;
    const { state: d } = await drives.load(t.token.drive_id);
    if (!d.exists) return null;
    return {
      driveId: d.driveId,
      driveName: d.name,
      userId: t.token.user_id,
      firstName: t.token.first_name ?? '',
      lastName: t.token.last_name ?? '',
      tokenId,
      mediaSecondsAllowance: mediaSecondsAllowance(d),
    };
  };
}

/** A token sent with another scheme (`Basic`, a bare token): told apart from no token at all. */
const NOT_BEARER = 'Authorization must use the Bearer scheme: send Authorization: Bearer <API_TOKEN>';

/**
 * Resolves a bearer token to its drive and user straight from the event store (token and drive
 * streams), so a token made a moment ago by the admin CLI works at once. Results are cached for
 * `cacheTtlMs`, which bounds how long a revoked token keeps working.
 *
 * Only a string of the exact token shape is looked up or cached, and the cache holds at most
 * `cacheMax` entries keyed by the token's SHA-256: its memory is bounded whatever callers send
 * (it once kept every string sent as a token). An unknown but well-formed token is cached too,
 * so guessing costs the store one read per guess per TTL at most. Lookups in flight are shared:
 * when an entry expires under load, one request reads the store and the others wait for it.
 */
export function createAuthenticator(deps: {
  store: EventStore;
  clock: Clock;
  cacheTtlMs?: number;
  cacheMax?: number;
}): Authenticate & { readonly cacheSize: number; readonly headersRemembered: number } {
  const ttl = deps.cacheTtlMs ?? 1000;
  const max = deps.cacheMax ?? 10_000;
  const cache = new LRUCache<string, { at: number; principal: Promise<Principal | null> }>({ max });
  const principalOf = principalsByTokenId(deps.store);
  const resolve = (token: string, tokenId: string) => principalOf(tokenId, (hash) => tokenMatches(token, hash));

  function lookup(token: string, tokenId: string, now: number): { at: number; principal: Promise<Principal | null> } {
    const key = hashToken(token);
    const hit = cache.get(key);
    if (hit && now - hit.at < ttl) return hit;
    const principal = resolve(token, tokenId);
    const entry = { at: now, principal };
    cache.set(key, entry);
    // A store failure is not an answer about the token: the next request asks again.
    principal.catch(() => cache.peek(key) === entry && cache.delete(key));
    return entry;
  }

  // The principals of valid tokens by the Authorization header exactly as sent, each until its
  // cache entry's TTL ends, as the cache itself: a client repeats its header on every request,
  // and this skips the header's parsing and the token's SHA-256 (a tenth of a GET /jobs/{id},
  // measured). Only valid tokens come in (junk never does), and it is emptied when it holds as
  // many as the cache may.
  const recent = new Map<string, { at: number; principal: Principal }>();
  // Raw tokens are not kept past their TTL: what has expired is dropped every TTL.
  setInterval(() => {
    const now = deps.clock.now().getTime();
    for (const [header, entry] of recent) if (now - entry.at >= ttl) recent.delete(header);
  }, ttl).unref();

  const authenticate = async (authorization: string | undefined): Promise<Principal> => {
    const now = deps.clock.now().getTime();
    const known = authorization === undefined ? undefined : recent.get(authorization);
    if (known && now - known.at < ttl) return known.principal;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m)
      throw new AppError('unauthorized', authorization?.trim() ? NOT_BEARER : 'missing API token: send Authorization: Bearer <API_TOKEN>');
    const tokenId = tokenIdOf(m[1]);
    const entry = tokenId ? lookup(m[1], tokenId, now) : null;
    const principal = entry ? await entry.principal : null;
    if (!principal) throw new AppError('unauthorized', 'invalid or revoked API token');
    if (recent.size >= max) recent.clear();
    recent.set(authorization!, { at: entry!.at, principal });
    return principal;
  };
  return Object.defineProperties(authenticate, {
    cacheSize: { get: () => cache.size },
    headersRemembered: { get: () => recent.size },
  }) as Authenticate & { readonly cacheSize: number; readonly headersRemembered: number };
}
