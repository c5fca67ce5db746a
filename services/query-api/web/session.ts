import type { Context } from 'koa';
import { AppError, invalidInput } from '../../../lib/domain/errors';
import { UnsupportedMediaType } from '../../../lib/http/middleware';

/**
 * The web session. The cookie holds the API token itself, not a server-side session id: there is
 * no session store to keep, and revoking the token (admin CLI) ends every session it backs on the
 * next request, bounded only by the authenticator's cache TTL. The token never reaches scripts
 * (HttpOnly, and the pages run none) and only travels back to this site (SameSite=Lax).
 */

export const SESSION_COOKIE = 'mps_session';
export const SESSION_SECONDS = 8 * 60 * 60;

/** `Set-Cookie` written by hand: Koa's cookies refuse `Secure` when TLS ends at a proxy that does not say so. */
export function sessionCookie(token: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${SESSION_SECONDS}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
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
