import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API tokens: `mps_<token id>_<secret>`. The id names the token's stream (so it can be revoked by
 * id without knowing the secret); only the SHA-256 of the whole token is stored. A token is 32
 * random bytes, so a fast hash is enough: there is nothing to brute-force.
 */

const TOKEN = /^mps_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

// One-shot `crypto.hash` (Node 20.12+) where there is one: every authenticated request hashes its token.
export const hashToken: (token: string) => string =
  typeof crypto.hash === 'function'
    ? (token) => crypto.hash('sha256', token, 'hex')
    : (token) => createHash('sha256').update(token).digest('hex');

export function generateToken(): { tokenId: string; token: string; secretHash: string } {
  const tokenId = randomBytes(8).toString('hex');
  const token = `mps_${tokenId}_${randomBytes(32).toString('base64url')}`;
  return { tokenId, token, secretHash: hashToken(token) };
}

/** The token id, or null when the string cannot be one of our tokens. */
export const tokenIdOf = (token: string): string | null => TOKEN.exec(token)?.[1] ?? null;

export function tokenMatches(token: string, secretHash: string): boolean {
  const a = Buffer.from(hashToken(token), 'hex');
  const b = Buffer.from(secretHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export const generateWebhookSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;
