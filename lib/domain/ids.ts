/** Identifier formats (DESIGN §3). Pure: generation is an input (ports/clock.ts). */
import { parse as parseUuid, v5 as uuidv5 } from 'uuid';

export const IMPORT_JOB_PREFIX = 'project-media-import-';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (s: string): boolean => UUID.test(s);
export const importJobId = (uuid: string): string => `${IMPORT_JOB_PREFIX}${uuid}`;

/** A job id we could have issued: an import id or a bare UUID. Anything else cannot exist. */
export const isJobId = (s: string): boolean => isUuid(s) || (s.startsWith(IMPORT_JOB_PREFIX) && isUuid(s.slice(IMPORT_JOB_PREFIX.length)));

/**
 * Whether the job with this id is surely an import: import ids carry their prefix, and no other
 * job type's do (agent and publish jobs are bare UUIDs). A bare UUID says nothing.
 */
export const isImportJobId = (jobId: string): boolean => jobId.startsWith(IMPORT_JOB_PREFIX);

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
// Its bytes, parsed once (given as text, uuid's v5 parses the namespace twice on every call), and
// the name as UTF-8 bytes, which is what v5 hashes (its own encoding of a string costs more).
const NAMESPACE_BYTES = parseUuid(COMPOSITION_NAMESPACE);
const candidateName = (origin: string, n: number): Uint8Array => Buffer.from(`${origin}#${n}`, 'utf8');
const candidate = (origin: string, n: number): string => uuidv5(candidateName(origin, n), NAMESPACE_BYTES);
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * `shortIdOf(candidate(origin, n))` from the UUID's bytes, without its text: the first five hex
 * digits are those of its first two bytes and a half. The accept path makes one per new project;
 * the namespace parsed twice, the name's encoding and the UUID's text were ~6 µs of it, measured.
 */
function candidateShortId(origin: string, n: number): string {
  const bytes = uuidv5(candidateName(origin, n), NAMESPACE_BYTES, new Uint8Array(16));
  return HEX[bytes[0]] + HEX[bytes[1]] + HEX[bytes[2]][0];
}

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

/**
 * `origin`'s candidates up to the first whose short id is not in `taken`, and `spare` more after
 * it: `AddComposition` picks from these what it would pick from all sixteen, unless more than
 * `spare` compositions took the next ones since `taken` was read (then it refuses, retriably).
 * Each candidate costs a SHA-1; all sixteen were a tenth of a millisecond of every import.
 */
export function candidatesUntilFree(origin: string, taken: ReadonlySet<string>, spare = 2): string[] {
  const list: string[] = [];
  let free = -1;
  for (let n = 0; n < CANDIDATES && (free < 0 || n <= free + spare); n++) {
    list.push(candidate(origin, n));
    if (free < 0 && !taken.has(shortIdOf(list[n]))) free = n;
  }
  return list;
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
  /** An agent conversation: its start and turns (lib/domain/conversation.ts). */
  conversation: (conversationId: string) => `conversation-${conversationId}`,
  /** A composition published as one media type (lib/domain/publication.ts): `<composition_id>-<video|audio>`. */
  publication: (publicationId: string) => `publication-${publicationId}`,
  /** A partner's one-time import link, named by the nonce in its URL. */
  importLink: (nonce: string) => `importlink-${nonce}`,
  /** An Idempotency-Key of one token, named by SHA-256 (hex) of `token_id + "\n" + key`: the key itself is the client's text. */
  idempotency: (scopeHash: string) => `idempotency-${scopeHash}`,
} as const;

/** The category of a stream id: the part before the first dash. */
export const streamCategory = (streamId: string): string => streamId.slice(0, streamId.indexOf('-'));

export const projectUrl = (webUrl: string, projectId: string, shortId?: string): string =>
  `${webUrl.replace(/\/+$/, '')}/${projectId}${shortId ? `/${shortId}` : ''}`;
