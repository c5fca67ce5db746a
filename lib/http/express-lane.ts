import { assertWellFormed, notJsonBody } from './well-formed';
import bourne from '@hapi/bourne';
import type { IncomingHttpHeaders, IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import type { IdempotencyClaim } from '../app/idempotency';
import type { Principal } from '../app/tenancy';
import { AppError } from '../domain/errors';
import type { ApiAppDeps } from './app';
import { consistencyGuard } from './consistency';
import { consumeRateLimit } from './guards';
import {
  accessLogger,
  answeredError,
  JSON_READ_TIMEOUT_MS,
  type AccessRecord,
  type ApiContext,
  errorResponse,
  requestIdOf,
} from './middleware';

/**
 * The express lane: the API's hottest routes (accepting an import, reading a job) answered on
 * node:http directly, ahead of Koa. Measured on this machine, Koa with @koa/router costs about as
 * much per request as node:http itself, which alone put `GET /jobs/{id}` under 0.7 of a bare Koa
 * server. The lane runs the same steps as the Koa pipeline, through the same functions: request
 * id, token, rate limit, JSON body, the route's handler, error mapping, access log and duration
 * metric.
 *
 * It takes only a request in the plain shape: the route's exact path with no query string and
 * nothing percent-encoded and, for a body, `Content-Type: application/json` (UTF-8) with a
 * `Content-Length` within the limit and no `Content-Encoding`. Anything else (gzip, another
 * charset, chunked, HEAD, `/V1/...`, a trailing slash) goes to Koa, where every route of the lane
 * is mounted too (`mountLaneRoutes`): the lane is never the only way to a route, and the edge
 * cases keep one implementation.
 */

/** What a lane route's handler gets: the same whether the lane or Koa served the request. */
export type LaneRequest = {
  readonly auth: Principal;
  readonly params: Readonly<Record<string, string>>;
  /** The parsed JSON body of a POST; `{}` for a GET. */
  readonly body: unknown;
  readonly requestId: string;
  /** A child logger carrying the request id (made when first used). */
  readonly log: Logger;
  /** As node parsed them (names in lower case). */
  readonly headers: IncomingHttpHeaders;
  /** Each header's values as sent, one per line (node's `headersDistinct`: a repeated header node joined with ", " in `headers`). */
  readonly headersDistinct: NodeJS.Dict<string[]>;
  /** Only with an Idempotency-Key the route may record now (a route wrapped by `idempotent`, lib/http/idempotency.ts). */
  readonly idempotency?: IdempotencyClaim;
};

/** `json`: the body already serialized (a kept answer), sent as it is. `headers`: set on the answer too. */
export type LaneReply = ({ readonly status: number; readonly body: unknown } | { readonly status: number; readonly json: string }) & {
  readonly headers?: Readonly<Record<string, string>>;
};

export type LaneRoute = {
  readonly method: 'GET' | 'POST';
  /** Under /v1, in @koa/router's syntax limited to literal and `:name` segments: `/jobs/:job_id`. */
  readonly path: string;
  handle(request: LaneRequest): Promise<LaneReply>;
};

/** The lane's routes as Koa routes on the /v1 router, behind its guards: the way for every request the lane does not take. */
export function mountLaneRoutes(v1: Router, routes: readonly LaneRoute[]): void {
  for (const route of routes) {
    const method = route.method === 'GET' ? 'get' : 'post';
    v1[method](route.path, async (ctx) => {
      const { state, request } = ctx as unknown as ApiContext;
      const reply = await route.handle({
        auth: state.auth,
        params: ctx.params,
        body: route.method === 'POST' ? (request.body ?? {}) : {},
        requestId: state.requestId,
        get log() {
          return state.log;
        },
        headers: ctx.req.headers,
        get headersDistinct() {
          return ctx.req.headersDistinct;
        },
      });
      ctx.status = reply.status;
      if (reply.headers) ctx.set(reply.headers);
      if ('json' in reply) {
        ctx.type = 'application/json';
        ctx.body = reply.json;
      } else ctx.body = reply.body;
    });
  }
}

type Compiled = { route: LaneRoute; pattern: string; segments: readonly string[] };

const JSON_TYPE = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-?8"?\s*)?$/i;
const DIGITS = /^\d{1,15}$/;

/** Serves `routes` when a request is in the plain shape, and hands every other request to `fallback` untouched. */
export function expressLane(deps: ApiAppDeps, routes: readonly LaneRoute[], fallback: RequestListener): RequestListener {
  const compiled: Compiled[] = routes.map((route) => ({
    route,
    pattern: `/v1${route.path}`,
    segments: `/v1${route.path}`.split('/'),
  }));
  if (compiled.length === 0) return fallback;
  const bodyLimit = deps.maxRequestBytes;
  const accessLog = accessLogger(deps.logger);
  const fence = consistencyGuard(deps.consistency);

  function take(req: IncomingMessage): { c: Compiled; params: Record<string, string> } | null {
    const url = req.url ?? '';
    if (!url.startsWith('/v1/') || url.includes('?') || url.includes('%')) return null;
    if (req.method === 'POST' && !plainJsonBody(req, bodyLimit)) return null;
    const parts = url.split('/');
    for (const c of compiled) {
      if (c.route.method !== req.method || c.segments.length !== parts.length) continue;
      const params = matchSegments(c.segments, parts);
      if (params) return { c, params };
    }
    return null;
  }

  return (req, res) => {
    const taken = take(req);
    if (!taken) return fallback(req, res);
    // serve answers every error it can; what is left (a throw while writing) is logged, never an unhandled rejection.
    serve(deps, accessLog, fence, taken.c, taken.params, req, res).catch((err: unknown) => {
      deps.logger.error({ err }, 'request failed after its answer was made');
      res.destroy();
    });
  };
}

function plainJsonBody(req: IncomingMessage, limit: number): boolean {
  const h = req.headers;
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined) return false;
  const length = h['content-length'];
  if (length === undefined || !DIGITS.test(length)) return false;
  const n = Number(length);
  return n > 0 && n <= limit && JSON_TYPE.test(h['content-type'] ?? '');
}

function matchSegments(pattern: readonly string[], parts: readonly string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i];
    if (p.startsWith(':')) {
      if (parts[i] === '') return null;
      params[p.slice(1)] = parts[i];
    } else if (p !== parts[i]) return null;
  }
  return params;
}

async function serve(
  deps: ApiAppDeps,
  accessLog: (record: AccessRecord) => void,
  fence: ReturnType<typeof consistencyGuard>,
  c: Compiled,
  params: Record<string, string>,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const started = performance.now();
  const requestId = requestIdOf(req.headers['x-request-id']);
  let child: Logger | undefined;
  const log = () => (child ??= deps.logger.child({ request_id: requestId }));
  const headers: Record<string, string | number> = { 'X-Request-Id': requestId };
  let status: number;
  let text: string;
  let auth: Principal | undefined;
  let error: AccessRecord['error'];
  try {
    auth = await deps.authenticate(req.headers.authorization);
    Object.assign(headers, await consumeRateLimit(deps.limiter, auth.tokenId));
    const json = c.route.method === 'POST' ? await readJsonBody(req) : {};
    const waiting = fence?.before(auth.tokenId);
    if (waiting) await waiting;
    const who = auth;
    const reply = await c.route.handle({
      auth: who,
      params,
      body: json,
      requestId,
      get log() {
        return log();
      },
      headers: req.headers,
      get headersDistinct() {
        return req.headersDistinct;
      },
    });
    status = reply.status;
    error = answeredError(status, 'body' in reply ? reply.body : undefined);
    if (reply.headers) Object.assign(headers, reply.headers);
    text = 'json' in reply ? reply.json : JSON.stringify(reply.body);
    const noted = fence?.after(auth.tokenId, c.route.method, status);
    if (noted) await noted;
  } catch (err) {
    const answer = errorResponse(err, log);
    status = answer.status;
    text = JSON.stringify(answer.body);
    error = answeredError(status, answer.body);
    Object.assign(headers, answer.headers);
  }
  headers['Content-Type'] = 'application/json; charset=utf-8';
  headers['Content-Length'] = Buffer.byteLength(text);
  res.writeHead(status, headers);
  res.end(text);
  deps.metrics?.httpRequestDuration.observe({ method: c.route.method, route: c.pattern, status }, (performance.now() - started) / 1000);
  accessLog({ requestId, method: c.route.method, path: req.url ?? '', status, started, driveId: auth?.driveId, error });
}

/**
 * The body, as the Koa pipeline's parser reads it (co-body, strict): UTF-8 with a byte-order mark
 * dropped, an object or an array at the top, `__proto__` refused. A body that has not arrived
 * within the JSON read limit ends the connection, as in Koa.
 *
 * A body that came in the same packets as its headers, as clients mostly send a small one, is
 * already buffered in full when the handler gets to it: it is taken at once, without the
 * listeners, the timer and the stream events of the general way (about 5 µs of a request,
 * measured).
 */
function readJsonBody(req: IncomingMessage): Promise<unknown> {
  if (req.readableLength > 0 && req.readableLength === Number(req.headers['content-length'])) {
    const body = req.read() as Buffer;
    try {
      return Promise.resolve(bodyOf(body.toString('utf8')));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => req.complete || req.destroy(), JSON_READ_TIMEOUT_MS);
    const fail = () => {
      clearTimeout(timer);
      reject(new AppError('invalid_input', 'request aborted'));
    };
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('error', fail);
    req.once('close', () => req.complete || fail());
    req.once('end', () => {
      clearTimeout(timer);
      try {
        resolve(bodyOf(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err);
      }
    });
  });
}

const STRICT_START = /^[ \t\n\r]*[[{]/;

function parseStrictJson(text: string): unknown {
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (!STRICT_START.test(json)) throw new SyntaxError('only an object or an array');
  return bourne.parse(json, { protoAction: 'error' });
}

/** The body, or `invalid_input`: not JSON as the Koa pipeline reads it, or not well-formed text. */
function bodyOf(text: string): unknown {
  let body: unknown;
  try {
    body = parseStrictJson(text);
  } catch {
    throw notJsonBody(text);
  }
  assertWellFormed(body, text);
  return body;
}
