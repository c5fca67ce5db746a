/** Identifier formats (DESIGN §3). Pure: generation is an input (ports/clock.ts). */
import { v5 as uuidv5 } from 'uuid';
import { hexDigest } from './digest';

export const IMPORT_JOB_PREFIX = 'project-media-import-';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (s: string): boolean => UUID.test(s);
export const importJobId = (uuid: string): string => `${IMPORT_JOB_PREFIX}${uuid}`;

/** A job id we could have issued: an import id or a bare UUID. Anything else cannot exist. */
export const isJobId = (s: string): boolean => isUuid(s) || (s.startsWith(IMPORT_JOB_PREFIX) && isUuid(s.slice(IMPORT_JOB_PREFIX.length)));

/** Composition short id: the first 5 hex characters of its UUID. */
export const shortIdOf = (compositionId: string): string => compositionId.replace(/-/g, '').slice(0, 5).toLowerCase();

const COMPOSITION_NAMESPACE = '5b0f2f55-6c1e-4f0e-9a43-0e4b1c2d7a10';

/**
 * The ids a composition of `origin` may take, in order (`AddComposition` takes the first whose
 * short id is free in the project). Name-based, so a retried job proposes the same ids and the
 * command API can tell a job's `project_url` before its compositions exist.
 */
export const compositionCandidates = (origin: string): string[] => Array.from({ length: CANDIDATES }, (_, n) => candidate(origin, n));

const CANDIDATES = 16;
// Its bytes, parsed once: given as text, uuid's v5 parses the namespace again on every call.
const NAMESPACE_BYTES = Buffer.from(COMPOSITION_NAMESPACE.replace(/-/g, ''), 'hex');
const candidateName = (origin: string, n: number): string => `${origin}#${n}`;
const candidate = (origin: string, n: number): string => uuidv5(Buffer.from(candidateName(origin, n), 'utf8'), NAMESPACE_BYTES);

/**
 * `shortIdOf(candidate(origin, n))` without making the UUID: a v5 UUID is the SHA-1 of the
 * namespace's bytes and the name's, with version and variant bits set in bytes 6 and 8, so its
 * first five hex digits are the digest's own. The accept path makes one per new project (the
 * UUID's text and uuid's encoding of the name were ~6 µs of it, measured).
 */
const candidateShortId = (origin: string, n: number): string =>
  hexDigest('sha1', Buffer.concat([NAMESPACE_BYTES, Buffer.from(candidateName(origin, n), 'utf8')])).slice(0, 5);

/**
 * The short id of the first of `origin`'s candidates not in `taken`, as `AddComposition` will
 * choose; made one at a time (the first is free but in a project of thousands of compositions,
 * and each costs a SHA-1: all 16 up front were 140 µs of every accepted import).
 */
export function firstFreeShortId(origin: string, taken: ReadonlySet<string>): string | undefined {
  for (let n = 0; n < CANDIDATES; n++) {
    const shortId = candidateShortId(origin, n);
    if (!taken.has(shortId)) return shortId;
  }
  return undefined;
}

/** The origins of an import's compositions: its placeholder, and the i-th composition the request asked for. */
export const compositionOrigin = (jobId: string, index: number | 'placeholder'): string => `${jobId}#${index}`;

export const streams = {
  job: (jobId: string) => `job-${jobId}`,
  project: (projectId: string) => `project-${projectId}`,
  composition: (compositionId: string) => `composition-${compositionId}`,
  /** `folderId` is derived from the drive and the path (see lib/app/folders). */
  folder: (folderId: string) => `folder-${folderId}`,
  /** The webhook delivery of a job's callback. */
  delivery: (jobId: string) => `delivery-${jobId}`,
  drive: (driveId: string) => `drive-${driveId}`,
  /** The drive's balances: reservations, settlements, releases (lib/domain/balance.ts). */
  balance: (driveId: string) => `balance-${driveId}`,
  token: (tokenHash: string) => `token-${tokenHash}`,
  /** A partner's one-time import link, named by the nonce in its URL. */
  importLink: (nonce: string) => `importlink-${nonce}`,
  /** An Idempotency-Key of one token, named by SHA-256 (hex) of `token_id + "\n" + key`: the key itself is the client's text. */
  idempotency: (scopeHash: string) => `idempotency-${scopeHash}`,
} as const;

/** The category of a stream id: the part before the first dash. */
export const streamCategory = (streamId: string): string => streamId.slice(0, streamId.indexOf('-'));

export const projectUrl = (webUrl: string, projectId: string, shortId?: string): string =>
  `${webUrl.replace(/\/+$/, '')}/${projectId}${shortId ? `/${shortId}` : ''}`;
