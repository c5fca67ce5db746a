import { randomBytes } from 'node:crypto';
import type { Clock } from '../ports/clock';
import type { ReadStore } from '../ports/read-store';
import type { Principal } from './tenancy';
import { hashToken } from './tokens';

/**
 * Web sessions: the cookie holds a random session id, never the API token, and the server keeps
 * `{ token_id, expires_at }` under the id's SHA-256 in the read store's `web_sessions`
 * collection (read.sqlite embedded, MongoDB distributed: every query-api replica reads the same
 * sessions). A session is only as good as its token: each use resolves the token id again, so
 * revoking the token (admin CLI) ends its sessions at once. Not a read model: replay never
 * clears it, and nothing but this module writes it.
 */

export const WEB_SESSIONS = 'web_sessions';

/** 32 random bytes, base64url: nothing like an API token (`mps_<id>_<secret>`), so never a bearer token. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

type SessionDoc = { _id: string; _rev: number; token_id: string; created_at: string; expires_at: string };

export type WebSessions = {
  /** A new session for the principal's token; its id goes in the cookie only. */
  start(principal: Principal): Promise<{ id: string; maxAgeSeconds: number }>;
  /** The principal behind a live session, or null (unknown, signed out, expired, or its token revoked). */
  principal(sessionId: string): Promise<Principal | null>;
  /** Signs out: the session id works no more, wherever it was copied. */
  end(sessionId: string): Promise<void>;
};

export function createWebSessions(deps: {
  store: ReadStore;
  clock: Clock;
  ttlSeconds: number;
  principalOf: (tokenId: string) => Promise<Principal | null>;
}): WebSessions {
  const keyOf = (sessionId: string) => hashToken(sessionId);
  let indexed: Promise<void> | undefined;
  const sweepExpired = async (now: Date) => {
    indexed ??= deps.store.ensureIndex(WEB_SESSIONS, ['expires_at']);
    await indexed;
    await deps.store.deleteMany(WEB_SESSIONS, { expires_at: { $lte: now.toISOString() } });
  };

  return {
    async start(principal) {
      const now = deps.clock.now();
      // Each sign-in drops the sessions that have expired, so the collection holds live ones only.
      await sweepExpired(now);
      const id = randomBytes(32).toString('base64url');
      const doc: SessionDoc = {
        _id: keyOf(id),
        _rev: 1,
        token_id: principal.tokenId,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + deps.ttlSeconds * 1000).toISOString(),
      };
      await deps.store.put(WEB_SESSIONS, doc, null);
      return { id, maxAgeSeconds: deps.ttlSeconds };
    },

    async principal(sessionId) {
      if (!SESSION_ID.test(sessionId)) return null;
      const doc = (await deps.store.get(WEB_SESSIONS, keyOf(sessionId))) as SessionDoc | null;
      if (!doc) return null;
      // The browser drops the cookie at Max-Age, but a copied cookie is not a browser's.
      if (doc.expires_at <= deps.clock.now().toISOString()) {
        await deps.store.deleteMany(WEB_SESSIONS, { _id: doc._id });
        return null;
      }
      const principal = await deps.principalOf(doc.token_id);
      if (!principal) await deps.store.deleteMany(WEB_SESSIONS, { _id: doc._id });
      return principal;
    },

    async end(sessionId) {
      if (SESSION_ID.test(sessionId)) await deps.store.deleteMany(WEB_SESSIONS, { _id: keyOf(sessionId) });
    },
  };
}
