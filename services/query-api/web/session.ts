import type { Context } from 'koa';
import { AppError, invalidInput } from '../../../lib/domain/errors';
import { UnsupportedMediaType } from '../../../lib/http/middleware';

/**
 * The web session cookie. It holds an opaque session id (lib/app/web-sessions.ts), never the API
 * token: the id is useless on /v1, and signing out or revoking the token ends it server-side,
 * wherever the cookie was copied. HttpOnly (the pages run no scripts anyway); SameSite=Lax, not
 * Strict, because a partner sends the user here with a cross-site link to `/import?nonce=…`, and
 * under Strict that first GET would arrive without the cookie and ask a signed-in user to sign
 * in again. Lax still keeps it off cross-site POSTs.
 */

export const SESSION_COOKIE = 'mps_session';

/** `Set-Cookie` written by hand: Koa's cookies refuse `Secure` when TLS ends at a proxy that does not say so. */
export function sessionCookie(sessionId: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${sessionId}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

export const clearedSessionCookie = (secure: boolean): string =>
  `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

const MAX_NEXT = 2048;

/**
 * Where to go after signing in: a path on this site, or null. One leading `/` only: `//host` and
 * `/\host` are other sites to a browser; control characters could split the `Location` header.
 */
export function safeNext(next: unknown): string | null {
  if (typeof next !== 'string' || next.length > MAX_NEXT) return null;
  if (!/^\/(?![/\\])[\x21-\x7e]*$/.test(next) || next.includes('\\')) return null;
  return next;
}

/**
 * A POST from another site's page is refused when the browser says where it came from. `Origin`
 * absent (older clients, curl) is allowed: the session cookie is SameSite=Lax, so a cross-site
 * form post carries no session anyway.
 */
export function isForeignOrigin(ctx: Context, webOrigin: string): boolean {
  const origin = ctx.get('origin');
  return origin !== '' && origin !== webOrigin;
}

/** A small `application/x-www-form-urlencoded` body, read here because no body parser runs outside /v1. */
export async function readForm(ctx: Context, options: { limitBytes: number; timeoutMs?: number }): Promise<URLSearchParams> {
  if (ctx.is('application/x-www-form-urlencoded') === false) {
    throw new UnsupportedMediaType('send the form as application/x-www-form-urlencoded');
  }
  const coding = ctx.get('content-encoding').trim().toLowerCase();
  if (coding && coding !== 'identity') throw new UnsupportedMediaType('a form must be sent without Content-Encoding');
  const tooLarge = () => new AppError('payload_too_large', `the form is larger than ${options.limitBytes} bytes`);
  if ((ctx.request.length ?? 0) > options.limitBytes) throw tooLarge();

  const chunks: Buffer[] = [];
  let size = 0;
  // A body that trickles in ties up a connection for nothing: cut it.
  const timer = setTimeout(() => ctx.req.destroy(), options.timeoutMs ?? 10_000);
  try {
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > options.limitBytes) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw invalidInput('the form did not arrive whole');
  } finally {
    clearTimeout(timer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
