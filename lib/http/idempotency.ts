import {
  fingerprintOf,
  IdempotencyKeyTaken,
  idempotencyKeys,
  type KeyedRequest,
  type IdempotencyClaim,
  type IdempotencyDeps,
  type RecordedAnswer,
} from '../app/idempotency';
import { AppError, conflict, invalidInput } from '../domain/errors';
import { keyReused, type IdempotencyVerdict } from '../domain/idempotency';
import type { LaneReply, LaneRequest, LaneRoute } from './express-lane';

/**
 * `Idempotency-Key` on the API's creating POSTs (DESIGN §8, Stripe's semantics), for any route in
 * the lane's shape, served by the express lane or by Koa alike: `const idempotent =
 * idempotency(deps)` once per app, then `idempotent(route)` for each creating route.
 *
 * - No header: the route runs as it is (one header lookup more).
 * - A key is 1 to 255 printable ASCII characters, else 400 `invalid_input`. Keys are per API
 *   token: the same key from another token is another key.
 * - The request is its fingerprint: method, path (parameters filled in, no query string) and the
 *   canonical JSON of the parsed body, so whitespace, key order and a gzip body do not matter.
 * - The same request within 24 hours of the recorded answer: that answer (status and body bytes)
 *   with `Idempotent-Replayed: true`, and nothing is written (the route does not run, or for a
 *   route that records with its appends, its batch is refused at the key). Another request: 422
 *   `unprocessable_entity`. A first answer carries no such header.
 * - A request with a key this process is still handling: 409 `conflict` with `state: "in_flight"`.
 *   Across processes the key's stream decides (lib/app/idempotency.ts).
 * - Only a 2xx is recorded: after an error the key is still free, and the request runs again.
 */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED = { 'Idempotent-Replayed': 'true' } as const;

const KEY = /^[\x20-\x7e]{1,255}$/;

export type IdempotentOptions = {
  /**
   * The route puts `request.idempotency.recordWith` first in its `appendInOrder` batch (the
   * import) and awaits `beforeOtherWrites()` before any write outside it (the import's folders,
   * only when it makes some). The key is then not read before
   * the route runs: the append finds out whether it was used (a conflict, and nothing of the
   * route is written), and an error of the route reads the key before it is answered, so a
   * recorded answer still wins. Other routes have the key read first and their 2xx recorded
   * after they answered.
   */
  readonly recordsWithItsAppends?: boolean;
};

export function idempotency(deps: IdempotencyDeps): (route: LaneRoute, options?: IdempotentOptions) => LaneRoute {
  // The keys this process is handling, by token and key (a key is printable ASCII: no newline).
  const inFlight = new Set<string>();
  const keys = idempotencyKeys(deps);

  return (route, options = {}) => ({
    method: route.method,
    path: route.path,
    handle(request) {
      const key = request.headers[IDEMPOTENCY_HEADER];
      if (key === undefined) return route.handle(request);
      // Each value as sent: node joins a repeated header's values with ", ", so two keys would read as one.
      return keyed(route, options, request, checkKey(request.headersDistinct[IDEMPOTENCY_HEADER] ?? [String(key)]));
    },
  });

  async function keyed(route: LaneRoute, options: IdempotentOptions, request: LaneRequest, key: string): Promise<LaneReply> {
    const { auth: who, requestId } = request;
    const scope = `${who.tokenId}\n${key}`;
    if (inFlight.has(scope)) {
      throw conflict(
        'a request with this Idempotency-Key is still in flight: wait for its answer, then send the request again to get it',
        'in_flight',
      );
    }
    inFlight.add(scope);
    try {
      const fingerprint = fingerprintOf(route.method, pathOf(route, request.params), request.body);
      const read = () => keys.read(who, key, fingerprint, requestId);
      let k = options.recordsWithItsAppends ? keys.assumeNew(who, key, fingerprint, requestId) : await read();
      for (let attempt = 1; ; attempt++) {
        if (k.verdict.kind !== 'absent') return settled(k.verdict);
        try {
          return await runRecorded(route, request, k, key, fingerprint, read);
        } catch (err) {
          const taken = err instanceof IdempotencyKeyTaken;
          // Read before the route ran and free: the route's error is the answer.
          if (!taken && k.read) throw err;
          k = await read();
          if (k.verdict.kind !== 'absent') return settled(k.verdict);
          if (!taken) throw err;
          // Taken, and absent now: the record it conflicted with had expired. Run again after it, once.
          if (attempt >= 2)
            throw new AppError('unavailable', 'the Idempotency-Key changed hands meanwhile; send the request again', { retriable: true });
        }
      }
    } finally {
      inFlight.delete(scope);
    }
  }

  /** Runs the route with the claim; records its 2xx after it unless the route recorded it with its own appends. */
  async function runRecorded(
    route: LaneRoute,
    request: LaneRequest,
    first: KeyedRequest,
    key: string,
    fingerprint: string,
    read: () => Promise<KeyedRequest>,
  ): Promise<LaneReply> {
    let k = first;
    const withRoute: { answer: RecordedAnswer | null } = { answer: null };
    const claim: IdempotencyClaim = {
      recordWith(status, body) {
        withRoute.answer = { status, body: JSON.stringify(body) };
        return k.recordWith(withRoute.answer);
      },
      async beforeOtherWrites() {
        if (k.read) return;
        k = await read();
        if (k.verdict.kind !== 'absent') throw new IdempotencyKeyTaken();
      },
    };
    const reply = await route.handle(withClaim(request, claim));
    // Recorded with the route's appends: what is sent is the text recorded, so a replay is the same bytes.
    if (withRoute.answer) return { status: withRoute.answer.status, json: withRoute.answer.body, headers: reply.headers };
    if (reply.status >= 200 && reply.status < 300) {
      const answer = { status: reply.status, body: 'json' in reply ? reply.json : JSON.stringify(reply.body) };
      await recordAfterAnswer(request, key, fingerprint, answer);
    }
    return reply;
  }

  /** What the route made is made: a failure to record it is logged, and the 2xx still answered (a retry would make another). */
  async function recordAfterAnswer(request: LaneRequest, key: string, fingerprint: string, answer: RecordedAnswer) {
    try {
      const { recorded } = await keys.recordAfter(request.auth, key, fingerprint, answer, request.requestId);
      if (!recorded) {
        request.log.warn({ status: answer.status }, 'Idempotency-Key recorded by another request meanwhile; this answer is not replayable');
      }
    } catch (err) {
      request.log.error({ err }, 'Idempotency-Key: the answer could not be recorded; a retry with the key runs again');
    }
  }
}

function checkKey(values: readonly string[]): string {
  if (values.length === 1 && KEY.test(values[0])) return values[0];
  throw invalidInput('the Idempotency-Key header must be one value of 1 to 255 printable ASCII characters (a UUID will do)');
}

function settled(verdict: Exclude<IdempotencyVerdict, { kind: 'absent' }>): LaneReply {
  if (verdict.kind === 'mismatch') throw keyReused(verdict.recordedAt);
  return { status: verdict.status, json: verdict.body, headers: REPLAYED };
}

/** The route's path under /v1 with its parameters filled in (encoded), whichever of the lane or Koa matched it. */
function pathOf(route: LaneRoute, params: Readonly<Record<string, string>>): string {
  return `/v1${route.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''))}`;
}

/** The request with the claim, its logger still made only when asked for. */
const withClaim = (request: LaneRequest, claim: IdempotencyClaim): LaneRequest => ({
  auth: request.auth,
  params: request.params,
  body: request.body,
  requestId: request.requestId,
  headers: request.headers,
  get headersDistinct() {
    return request.headersDistinct;
  },
  idempotency: claim,
  get log() {
    return request.log;
  },
});
