import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed URLs: the URL is the credential (direct uploads now, publish downloads later). The
 * signature is HMAC-SHA256 over a canonical string of the path and every query parameter,
 * `expires` included, so changing, adding or dropping any of them breaks it. The path is the one
 * relative to the base URL (`/uploads/<id>` under `https://host/v1`): a proxy that moves the
 * service under another prefix does not invalidate URLs.
 *
 * Query: the caller's params, then `expires` (Unix seconds) and `signature` (base64url, 43 chars).
 */

export const EXPIRES = 'expires';
export const SIGNATURE = 'signature';
const VERSION = 'v1';
const MIN_SECRET_LENGTH = 16;
const SIGNATURE_TEXT = /^[A-Za-z0-9_-]{43}$/;
const UNIX_SECONDS = /^\d{1,12}$/;

export type SigningOptions = { secret: string; expiresAt: Date };

/**
 * The expiry of a URL signed at `now` for `ttlMs`, cut to the whole second its `expires` names
 * (Unix seconds): what a response says of the URL is then the instant the URL itself carries.
 */
export const signedExpiry = (now: Date, ttlMs: number): Date => new Date(Math.floor((now.getTime() + ttlMs) / 1000) * 1000);
export type VerifyOptions = { secret: string; now: Date };
export type Verified =
  | { ok: true; params: Record<string, string>; expiresAt: Date }
  | { ok: false; reason: 'tampered' | 'malformed' }
  | { ok: false; reason: 'expired'; expiresAt: Date };

/**
 * `baseUrl` + `path` + `?params&expires=…&signature=…`; only `path` and the query are signed.
 * `path` is given as it appears in the URL (already percent-encoded where needed).
 */
export function signUrl(baseUrl: string, path: string, params: Record<string, string>, options: SigningOptions): string {
  checkSecret(options.secret);
  if (!path.startsWith('/')) throw new Error(`a signed path starts with "/": ${JSON.stringify(path)}`);
  for (const reserved of [EXPIRES, SIGNATURE]) {
    if (Object.hasOwn(params, reserved)) throw new Error(`"${reserved}" is reserved in signed URLs`);
  }
  const expires = Math.floor(options.expiresAt.getTime() / 1000);
  if (!Number.isFinite(expires) || expires < 0) throw new Error('expiresAt is not a valid date');
  const signed = new Map([...Object.entries(params), [EXPIRES, String(expires)]]);
  const query = new URLSearchParams([...signed, [SIGNATURE, signatureOf(options.secret, path, signed)]]);
  return `${baseUrl.replace(/\/+$/, '')}${path}?${query}`;
}

/**
 * Checks a request's path (relative to the base URL) and raw query string. The signature is
 * checked before the expiry, so `expired` is only ever said of a URL this service issued.
 */
export function verifySignedUrl(path: string, query: string | URLSearchParams, options: VerifyOptions): Verified {
  checkSecret(options.secret);
  const received = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(query)) {
    if (received.has(name)) return { ok: false, reason: 'malformed' }; // which copy was signed?
    received.set(name, value);
  }
  const signature = received.get(SIGNATURE);
  const expires = received.get(EXPIRES);
  if (!signature || !SIGNATURE_TEXT.test(signature) || !expires || !UNIX_SECONDS.test(expires)) return { ok: false, reason: 'malformed' };
  received.delete(SIGNATURE);

  if (!sameText(signature, signatureOf(options.secret, path, received))) return { ok: false, reason: 'tampered' };
  const expiresAt = new Date(Number(expires) * 1000);
  if (options.now.getTime() >= expiresAt.getTime()) return { ok: false, reason: 'expired', expiresAt };
  received.delete(EXPIRES);
  return { ok: true, params: Object.fromEntries(received), expiresAt };
}

/** Sorted `name=value` pairs, each percent-encoded, so no value can smuggle in a separator. */
function signatureOf(secret: string, path: string, params: ReadonlyMap<string, string>): string {
  const pairs = [...params]
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const canonical = `${VERSION}\n${path}\n${pairs.join('&')}`;
  return createHmac('sha256', secret).update(canonical).digest('base64url');
}

/** Constant time for equal lengths; the length of a signature is public anyway. */
function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function checkSecret(secret: string): void {
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    throw new Error(`the signing secret must be at least ${MIN_SECRET_LENGTH} characters`);
  }
}
