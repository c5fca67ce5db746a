import { createHash, hash } from 'node:crypto';
import { AppError } from '../domain/errors';
import { streams } from '../domain/ids';
import { idempotencyDecider, idempotencyVerdict, type IdempotencyState, type IdempotencyVerdict } from '../domain/idempotency';
import type { Clock, Ids } from '../ports/clock';
import type { EventMetadata, EventStore, StreamAppend } from '../ports/event-store';
import { commandHandler, decideAt } from './command-handler';
import type { Principal } from './tenancy';

/**
 * Idempotency-Key on the event store (the source of truth: it survives a restart and holds
 * across replicas). A key of a token is a stream, `idempotency-<sha256(token_id + "\n" + key)>`,
 * holding the first 2xx answer to the request sent with it (lib/domain/idempotency.ts). The
 * HTTP side (lib/http/idempotency.ts) replays or refuses, runs the route, and records its answer,
 * in one of two ways:
 *
 * - **with the creation** (`KeyedRequest.recordWith`): the route puts the key's append first in
 *   its own `appendInOrder` batch. The embedded store commits the batch in one group commit and
 *   stops at the first conflict, so the key and what the request creates exist together or not
 *   at all, and a request whose key was used (by an earlier request, or by another process
 *   meanwhile) creates nothing. Such a route's key need not be read first (`assumeNewKey`);
 * - **after it** (`recordAfter`), for routes with an append of their own: a crash, a store failure
 *   or another process's record in between leaves the creation made and the key free (or
 *   holding the other process's answer).
 */

export type IdempotencyDeps = { readonly store: EventStore; readonly clock: Clock; readonly ids: Ids };

/** A 2xx answer as it is recorded and replayed: its status and its body's JSON text. */
export type RecordedAnswer = { readonly status: number; readonly body: string };

/** The key's append lost to another request's (a handler whose batch it led throws it): read the key again. */
export class IdempotencyKeyTaken extends Error {
  constructor() {
    super('another request recorded this Idempotency-Key first');
    this.name = 'IdempotencyKeyTaken';
  }
}

/**
 * Given to a route's handler with a request that has a key it may record now: `recordWith` is the
 * append recording the answer (status and body, serialized as sent), for the first place of the
 * route's own `appendInOrder` batch; a conflict on it is `IdempotencyKeyTaken`. A handler that
 * does not use it has its 2xx recorded after it answered.
 */
export type IdempotencyClaim = {
  recordWith(status: number, body: unknown): StreamAppend;
  /**
   * To await before any write outside that batch (the import's folders): reads the key if it was
   * not read yet, and throws `IdempotencyKeyTaken` if it is used, so nothing is written for a
   * request that will be replayed or refused.
   */
  beforeOtherWrites(): Promise<void>;
};

/** A request's key: what it gets, and how to record its answer. */
export type KeyedRequest = {
  /** false: not read, taken as never used (`assumeNewKey`); the append then finds out. */
  readonly read: boolean;
  readonly verdict: IdempotencyVerdict;
  /** The append recording `answer` after the state read, for the first place of the route's `appendInOrder` batch. */
  recordWith(answer: RecordedAnswer): StreamAppend;
};

/**
 * SHA-256 (hex) in one call where node has `crypto.hash` (20.12 and later), else through a Hash
 * object: the same digest, about a microsecond less each here, and a keyed request makes two.
 */
const sha256Hex: (text: string) => string =
  typeof hash === 'function' ? (text) => hash('sha256', text, 'hex') : (text) => createHash('sha256').update(text).digest('hex');

/** SHA-256 (hex) of the request: method and path (parameters filled in), then the body's canonical JSON. */
export function fingerprintOf(method: string, path: string, body: unknown): string {
  return sha256Hex(`${method} ${path}\n${canonicalJson(body)}`);
}

/**
 * JSON with every object's keys sorted, at every depth: two bodies that parse alike read alike.
 * (Written out rather than with filter, map and join: one string built as it goes.)
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) text += (i === 0 ? '' : ',') + canonicalJson(value[i]);
    return `${text}]`;
  }
  const o = value as Record<string, unknown>;
  let text = '{';
  for (const k of Object.keys(o).sort()) {
    if (o[k] === undefined) continue;
    text += `${text === '{' ? '' : ','}${JSON.stringify(k)}:${canonicalJson(o[k])}`;
  }
  return `${text}}`;
}

/** The id of `who`'s key: its stream is `streams.idempotency(id)`. */
const keyIdOf = (who: Principal, key: string) => sha256Hex(`${who.tokenId}\n${key}`);

const metadataOf = (streamId: string, who: Principal, requestId: string): EventMetadata => ({
  partition_key: streamId,
  correlation_id: requestId,
  drive_id: who.driveId,
  user_id: who.userId,
});

/** The keys on `deps.store`: built once per app (lib/http/idempotency.ts), with the handler of their streams. */
export type IdempotencyKeys = {
  /** Reads the key of `who`: replay, mismatch or absent for this fingerprint now, and the append that would record an answer. */
  read(who: Principal, key: string, fingerprint: string, requestId: string): Promise<KeyedRequest>;
  /**
   * The key taken as never used, without reading it (a new key is the common case, and a read of
   * a stream costs the accept path ~10–30 µs): its record's append expects no stream, so if the
   * key was used after all the append conflicts and the key is read then.
   */
  assumeNew(who: Principal, key: string, fingerprint: string, requestId: string): KeyedRequest;
  /**
   * Records `answer` once the route's own append has succeeded (read, decide, append, as every
   * command). `recorded: false`: another request recorded the key in between (another process;
   * this one holds the key in flight), and what this request created stays without a key.
   */
  recordAfter(who: Principal, key: string, fingerprint: string, answer: RecordedAnswer, requestId: string): Promise<{ recorded: boolean }>;
};

export function idempotencyKeys(deps: IdempotencyDeps): IdempotencyKeys {
  const keys = commandHandler(deps.store, idempotencyDecider, streams.idempotency);
  return {
    async read(who, key, fingerprint, requestId) {
      const id = keyIdOf(who, key);
      const { state, revision } = await keys.load(id);
      return keyedAt(deps, who, streams.idempotency(id), fingerprint, requestId, { read: true, state, revision });
    },
    assumeNew(who, key, fingerprint, requestId) {
      const state = idempotencyDecider.initialState();
      return keyedAt(deps, who, streams.idempotency(keyIdOf(who, key)), fingerprint, requestId, { read: false, state, revision: null });
    },
    async recordAfter(who, key, fingerprint, answer, requestId) {
      const id = keyIdOf(who, key);
      try {
        const { events } = await keys.handle(id, recordCommand(who, fingerprint, answer, deps.clock.now().toISOString()), {
          newId: () => deps.ids.uuidv7(),
          metadata: metadataOf(streams.idempotency(id), who, requestId),
        });
        return { recorded: events.length > 0 };
      } catch (err) {
        if (err instanceof AppError && err.code === 'unprocessable_entity') return { recorded: false };
        throw err;
      }
    },
  };
}

function keyedAt(
  deps: IdempotencyDeps,
  who: Principal,
  streamId: string,
  fingerprint: string,
  requestId: string,
  at: { read: boolean; state: IdempotencyState; revision: number | null },
): KeyedRequest {
  const now = deps.clock.now().toISOString();
  return {
    read: at.read,
    verdict: idempotencyVerdict(at.state, fingerprint, now),
    recordWith: (answer) =>
      decideAt(streamId, idempotencyDecider, at.state, at.revision, recordCommand(who, fingerprint, answer, now), {
        newId: () => deps.ids.uuidv7(),
        metadata: metadataOf(streamId, who, requestId),
      }),
  };
}

const recordCommand = (who: Principal, fingerprint: string, answer: RecordedAnswer, now: string) =>
  ({ type: 'RecordResponse', token_id: who.tokenId, fingerprint, status: answer.status, body: answer.body, now }) as const;
