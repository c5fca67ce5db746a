import { createHash, hash } from 'node:crypto';

/**
 * The hex digest of `data`, in one call where node has `crypto.hash` (20.12 and later), else
 * through a Hash object: the same digest, and the one call costs about a microsecond less here
 * (the accept path hashes twice per request with an Idempotency-Key, once without).
 */
export const hexDigest: (algorithm: 'sha1' | 'sha256', data: string | Buffer) => string =
  typeof hash === 'function'
    ? (algorithm, data) => hash(algorithm, data, 'hex')
    : (algorithm, data) => createHash(algorithm).update(data).digest('hex');
