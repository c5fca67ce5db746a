import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures as Standard Webhooks has them, so any of its receiver libraries verifies
 * ours: `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed by the
 * bytes of the secret's base64 part.
 *
 * Secrets are `whsec_<base64>` (see `generateWebhookSecret`). A secret without the prefix is read
 * as base64 too, as the Standard Webhooks libraries do, so a receiver configured either way agrees
 * with us. A secret that is not strict base64, or decodes to nothing, throws: it is a configuration
 * error, and reading it leniently would sign with a key no receiver library derives.
 */

export interface WebhookMessage {
  /** Stable across retries of one delivery, so a receiver can drop duplicates. */
  readonly id: string;
  /** Unix seconds of this attempt. */
  readonly timestamp: number;
  /** The exact bytes sent: signing a re-serialised body would not verify. */
  readonly body: string;
}

export interface WebhookHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

export interface VerifyWebhookOptions {
  readonly now: Date;
  /** How far the timestamp may lie from `now`, either way. Default 300, as in Standard Webhooks. */
  readonly toleranceSeconds?: number;
}

const PREFIX = 'whsec_';
const VERSION = 'v1';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UNIX_SECONDS = /^\d{1,12}$/;
// Standard Webhooks ids are printable ASCII; a "." inside an id would still sign unambiguously, a newline would not.
const ID = /^[\x21-\x7e]{1,256}$/;

export function signWebhook(message: WebhookMessage, secret: string): WebhookHeaders {
  const { id, timestamp, body } = message;
  if (!ID.test(id)) throw new Error('a webhook id is 1 to 256 printable ASCII characters');
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new Error('a webhook timestamp is whole Unix seconds');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `${VERSION},${signatureOf(keyOf(secret), id, String(timestamp), body)}`,
  };
}

/**
 * True when one of the space-separated `v1,` signatures matches and the timestamp lies within
 * the tolerance of `now`. Header names are matched case-insensitively; a header given twice
 * (an array) is refused, since which copy was signed cannot be told.
 */
export function verifyWebhook(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  body: string | Buffer,
  secret: string,
  options: VerifyWebhookOptions,
): boolean {
  const key = keyOf(secret);
  const id = single(headers, 'webhook-id');
  const timestamp = single(headers, 'webhook-timestamp');
  const signatures = single(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) return false;
  if (!ID.test(id) || !UNIX_SECONDS.test(timestamp)) return false;
  const skew = Math.abs(Math.floor(options.now.getTime() / 1000) - Number(timestamp));
  if (!(skew <= (options.toleranceSeconds ?? 300))) return false;

  const expected = Buffer.from(signatureOf(key, id, timestamp, body));
  let matched = false;
  // Every candidate is compared, so the time taken does not tell which one matched.
  for (const candidate of signatures.split(' ')) {
    const [version, signature, ...rest] = candidate.split(',');
    if (version !== VERSION || signature === undefined || rest.length > 0) continue;
    const given = Buffer.from(signature);
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}

function keyOf(secret: string): Buffer {
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  if (encoded === '' || !BASE64.test(encoded)) throw new Error('a webhook secret is "whsec_" followed by base64');
  return Buffer.from(encoded, 'base64');
}

function signatureOf(key: Buffer, id: string, timestamp: string, body: string | Buffer): string {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

function single(headers: Readonly<Record<string, string | readonly string[] | undefined>>, name: string): string | undefined {
  let found: string | undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value !== 'string' || found !== undefined) return undefined;
    found = value;
  }
  return found;
}
