import { AppError } from '../domain/errors';
import { streams } from '../domain/ids';
import type { Clock } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import { loadState } from './command-handler';
import { driveDecider, tokenDecider } from './deciders';
import { tokenIdOf, tokenMatches } from './tokens';

export type Principal = { driveId: string; driveName: string; userId: string; tokenId: string };

/**
 * Resolves a bearer token to its drive and user straight from the event store (token and drive
 * streams), so a token made a moment ago by the admin CLI works at once. Results are cached for
 * `cacheTtlMs`, which bounds how long a revoked token keeps working.
 */
export function createAuthenticator(deps: { store: EventStore; clock: Clock; cacheTtlMs?: number }) {
  const ttl = deps.cacheTtlMs ?? 1000;
  const cache = new Map<string, { at: number; principal: Principal | null }>();

  async function resolve(token: string): Promise<Principal | null> {
    const tokenId = tokenIdOf(token);
    if (!tokenId) return null;
    const { state: t } = await loadState(deps.store, streams.token(tokenId), tokenDecider);
    if (!t.exists || t.revoked || !tokenMatches(token, t.token.secret_hash)) return null;
    const { state: d } = await loadState(deps.store, streams.drive(t.token.drive_id), driveDecider);
    if (!d.exists) return null;
    return { driveId: d.driveId, driveName: d.name, userId: t.token.user_id, tokenId };
  }

  return async function authenticate(authorization: string | undefined): Promise<Principal> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new AppError('unauthorized', 'missing API token: send Authorization: Bearer <API_TOKEN>');
    const now = deps.clock.now().getTime();
    const hit = cache.get(m[1]);
    let principal = hit && now - hit.at < ttl ? hit.principal : undefined;
    if (principal === undefined) {
      principal = await resolve(m[1]);
      if (cache.size > 10_000) cache.clear();
      cache.set(m[1], { at: now, principal });
    }
    if (!principal) throw new AppError('unauthorized', 'invalid or revoked API token');
    return principal;
  };
}

export type Authenticate = ReturnType<typeof createAuthenticator>;
