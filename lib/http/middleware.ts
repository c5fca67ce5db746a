import { bodyParser } from '@koa/bodyparser';
import { assertWellFormed, notJsonBody } from './well-formed';
import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import pino, { type Logger } from 'pino';
import type { Histogram } from 'prom-client';
import { AppError, invalidInput } from '../domain/errors';
import type { Principal } from '../app/tenancy';

/** Koa plumbing shared by command-api and query-api. */

export type ApiState = { requestId: string; log: Logger; auth: Principal };
export type ApiContext = Context & { state: ApiState };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's `X-Request-Id` when sane (a gateway's), else a new one. */
export const requestIdOf = (incoming: string | string[] | undefined): string =>
  typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();

export type AccessRecord = {
  requestId: string;
  method: string;
  path: string;
  status: number;
  /** performance.now() when the request came in. */
  started: number;
  driveId: string | undefined;
  /** The answer's `{error, message}`, when it is one (4xx, 5xx). */
  error?: { readonly code: string; readonly message: string };
};

/** The error code and message of an answer's body, for its access line. */
export function answeredError(status: number, body: unknown): AccessRecord['error'] {
  if (status < 400 || typeof body !== 'object' || body === null) return undefined;
  const { error, message } = body as { error?: unknown; message?: unknown };
  return typeof error === 'string' ? { code: error, message: typeof message === 'string' ? message : '' } : undefined;
}

/** How long template lines wait to be written together. */
const LINE_BATCH_MS = 10;

/**
 * The writers holding lines, written at exit by one listener for them all: a listener per
 * writer (one per app, and tests make many) piled up on `process` and kept every logger alive.
 */
const waiting = new Set<() => void>();
let listening = false;
function waitAtExit(flush: () => void): void {
  if (!listening) process.on('exit', writeWaiting);
  listening = true;
  waiting.add(flush);
}
function writeWaiting(): void {
  for (const flush of [...waiting]) {
    try {
      flush();
    } catch {
      // the destination is gone (stdout closed): nothing left to do
    }
  }
}

type LineWriter = {
  /** `{"level":"info","time":"<now>"` and the logger's bindings: how pino starts an info line. */
  start(): string;
  /** Queues a whole line, written with the others of the next 10 ms. */
  write(line: string): void;
};

/** One per logger, so that the lines of every template keep the order they were made in. */
const lineWriters = new WeakMap<Logger, LineWriter>();

/**
 * Info lines made from a template and written to the logger's destination directly, the lines
 * of up to 10 ms at a time (each keeps the time it was made): the line `logger.info(fields, msg)`
 * writes, for a pino logger without hooks, mixins or a log formatter, as `createLogger` makes.
 * A pino call costs about 3.5 µs per line here (its serialization and write were once 12 µs of
 * a 48 µs `GET /jobs/{id}`); from a template, a batch at a time, a fraction of that. What is
 * waiting is written when the process exits; a `kill -9` loses at most the last 10 ms of them,
 * as it loses what the destination had not written yet. `test/unit/access-log.test.ts` holds
 * the lines equal to pino's.
 */
function lineWriter(logger: Logger): LineWriter {
  const existing = lineWriters.get(logger);
  if (existing) return existing;
  const internals = logger as unknown as Record<symbol, unknown>;
  const destination = internals[pino.symbols.streamSym] as { write(text: string): unknown; flushSync?(): void };
  // How pino starts a line: the level as its formatter writes it, the time as its function does, the bindings.
  const head = (internals[pino.symbols.lsCacheSym] as Record<number, string>)[logger.levels.values.info];
  const time = perMillisecond(internals[pino.symbols.timeSym] as () => string);
  const bindings = internals[pino.symbols.chindingsSym] as string;
  let pending = '';
  const flush = () => {
    const text = pending;
    pending = '';
    if (text) destination.write(text);
  };
  const flushNow = () => {
    waiting.delete(flushNow);
    flush();
    destination.flushSync?.();
  };
  const writer: LineWriter = {
    start: () => `${head}${time()}${bindings}`,
    write(line) {
      if (pending === '') {
        setTimeout(() => (waiting.delete(flushNow), flush()), LINE_BATCH_MS).unref();
        waitAtExit(flushNow);
      }
      pending += line;
    },
  };
  lineWriters.set(logger, writer);
  return writer;
}

/**
 * pino's ISO time, made once per millisecond: it is the same text for every line of that
 * millisecond, and an accepted import writes two lines (its `Date` and `toISOString` were ~1.5 µs
 * a line here). Any other time function is called for each line, as pino calls it.
 */
function perMillisecond(time: () => string): () => string {
  if (time !== pino.stdTimeFunctions.isoTime) return time;
  let at = -1;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== at) {
      at = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

/**
 * The access line, one per request: `{"level":"info","time":…,<the logger's bindings>,"request_id",
 * "method","path","status","ms","drive_id","error_code","error_message","msg":"request"}` (the
 * error's fields on a 4xx or 5xx), as `logger.info(fields, 'request')` writes it, from a template
 * (see `lineWriter`).
 */
export function accessLogger(logger: Logger): (record: AccessRecord) => void {
  const lines = lineWriter(logger);
  return (r) => {
    if (!logger.isLevelEnabled('info')) return;
    const ms = Math.round((performance.now() - r.started) * 10) / 10;
    const drive = r.driveId === undefined ? '' : `,"drive_id":${JSON.stringify(r.driveId)}`;
    const error = r.error ? `,"error_code":${JSON.stringify(r.error.code)},"error_message":${JSON.stringify(r.error.message)}` : '';
    lines.write(
      `${lines.start()},"request_id":${JSON.stringify(r.requestId)},"method":${JSON.stringify(r.method)},` +
        `"path":${JSON.stringify(r.path)},"status":${r.status},"ms":${ms}${drive}${error},"msg":"request"}\n`,
    );
  };
}

/**
 * An info line of string fields with a fixed message, as `logger.info(fields, msg)` writes it
 * (an undefined field is left out, as pino leaves it out), from a template (see `lineWriter`):
 * for the lines of a hot path, such as `import accepted`.
 */
export function infoLine(logger: Logger, msg: string): (fields: Readonly<Record<string, string | undefined>>) => void {
  const lines = lineWriter(logger);
  const end = `,"msg":${JSON.stringify(msg)}}\n`;
  return (fields) => {
    if (!logger.isLevelEnabled('info')) return;
    let line = lines.start();
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) line += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
    }
    lines.write(line + end);
  };
}

/**
 * Request ids: taken from `X-Request-Id` when sane, else made; echoed back and logged. The child
 * logger handlers use is made only when one asks for it: most requests never log anything but
 * the access line, and a pino child costs more than the line itself.
 */
export const requestContext = (logger: Logger): Middleware => {
  const accessLog = accessLogger(logger);
  return async (ctx, next) => {
    const requestId = requestIdOf(ctx.req.headers['x-request-id']);
    ctx.state.requestId = requestId;
    let child: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      get: () => (child ??= logger.child({ request_id: requestId })),
      enumerable: true,
      configurable: true,
    });
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      const driveId = (ctx.state as Partial<ApiState>).auth?.driveId;
      const error = answeredError(ctx.status, ctx.body);
      accessLog({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, started, driveId, error });
    }
  };
};

/**
 * Request durations by route pattern. Goes first, so it also times and counts what the error
 * mapping answered.
 */
export const observeDuration =
  (histogram: Histogram<'method' | 'route' | 'status'>): Middleware =>
  async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      histogram.observe({ method: ctx.method, route: routePattern(ctx), status: ctx.status }, (performance.now() - started) / 1000);
    }
  };

type MatchedLayer = { readonly path: string | RegExp; readonly methods: readonly string[] };

/**
 * The pattern of the route that matched (`/v1/jobs/:job_id`), or `unmatched`. Not
 * `ctx._matchedRoute`: every `router.use` layer overwrites it with its own path as it runs, so a
 * request the auth guard refused would carry the guard's prefix regex instead of its route.
 */
export function routePattern(ctx: Context): string {
  const matched = (ctx as unknown as { matched?: readonly MatchedLayer[] }).matched;
  if (matched) {
    for (let i = matched.length - 1; i >= 0; i--) {
      if (matched[i].methods.includes(ctx.method)) return String(matched[i].path);
    }
  }
  return 'unmatched';
}

/** An AppError that sets response headers too (a 429's Retry-After and rate-limit headers). */
export class AppErrorWithHeaders extends AppError {
  constructor(
    code: AppError['code'],
    message: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(code, message);
  }
}

/**
 * What an error answers: the spec's body, its status and headers. Anything unexpected is a 500
 * that leaks nothing, logged as an error with its stack. A 503 `unavailable` is a state the
 * service expects and clients retry (starting up, a worker restarting, a store or disk fault):
 * a warning with its code, message and cause.
 */
export function errorResponse(
  err: unknown,
  log: () => Logger,
): { status: number; body: Record<string, unknown>; headers: Readonly<Record<string, string>> } {
  const appError = toAppError(err);
  if (appError.code === 'unavailable') log().warn({ err: appError, cause: causeOf(appError) }, 'request answered 503 unavailable');
  else if (appError.status >= 500) log().error({ err }, 'request failed');
  return { status: appError.status, body: appError.toBody(), headers: appError instanceof AppErrorWithHeaders ? appError.headers : {} };
}

/**
 * A query string whose percent-escapes are not escaped UTF-8 (`%ZZ`, `%E0%A4`) is a 400: node's
 * parser reads it as some other text, so a filter of it matched nothing and the list came back
 * empty, as if the filter were right. Looked at only when the query holds a `%`.
 */
export const wellEscapedQuery = (): Middleware => (ctx, next) => {
  const query = ctx.querystring;
  if (query.includes('%')) {
    try {
      decodeURIComponent(query);
    } catch {
      throw invalidInput('the query string has a malformed percent-escape: escape UTF-8 bytes as %XX (a space as %20 or +)');
    }
  }
  return next();
};

/** Maps errors to the spec's bodies (`errorResponse`). */
export const errorHandler = (): Middleware => async (ctx, next) => {
  try {
    await next();
  } catch (err) {
    const answer = errorResponse(err, () => (ctx.state as ApiState).log);
    ctx.set(answer.headers);
    ctx.status = answer.status;
    ctx.body = answer.body;
  }
};

/** What lies under an error, for operators (a storage fault's path and SQLite code); undefined when nothing does. */
const causeOf = (err: Error): string | undefined => (err.cause instanceof Error ? err.cause.message : undefined);

function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (outOfDescriptors(err)) return OUT_OF_DESCRIPTORS();
  // Koa and its body parser throw http-errors with `status` and `expose`.
  const e = err as { status?: number; expose?: boolean; message?: string; type?: string; name?: string };
  // @koa/bodyparser throws a bare SyntaxError with status 400 for malformed JSON.
  if (e?.name === 'SyntaxError' && e.status === 400) return notJsonBody((err as { body?: unknown }).body);
  if (typeof e?.status === 'number' && e.status < 500 && e.expose) {
    if (e.status === 413) return new AppError('payload_too_large', 'request body is too large');
    if (e.status === 415) return new AppError('invalid_input', 'request body must be JSON (Content-Type: application/json)');
    if (e.type === 'entity.parse.failed') return notJsonBody((err as { body?: unknown }).body);
    return new AppError('invalid_input', e.message ?? 'invalid request');
  }
  return new AppError('internal_error', 'internal error');
}

/** Seconds a request refused for want of file descriptors is asked to wait. */
const DESCRIPTORS_RETRY_AFTER = '5';

/**
 * EMFILE/ENFILE: this process or the system is out of file descriptors. The request may well
 * succeed in a moment (issue 19: slow uploads held them all), so 503 with Retry-After, never a 500.
 */
const outOfDescriptors = (err: unknown): boolean => {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? (err as { cause?: NodeJS.ErrnoException } | undefined)?.cause?.code;
  return code === 'EMFILE' || code === 'ENFILE';
};

const OUT_OF_DESCRIPTORS = () =>
  new AppErrorWithHeaders('unavailable', 'the server has too many files open; retry after the Retry-After seconds', {
    'Retry-After': DESCRIPTORS_RETRY_AFTER,
  });

/**
 * `invalid_input` answered with 415, as RFC 9110 §15.5.16 asks for a content coding or charset
 * the server does not take: the body may be fine, the way it was sent is not.
 */
export class UnsupportedMediaType extends AppError {
  override readonly status = 415;
  constructor(message: string) {
    super('invalid_input', message);
  }
}

const CODINGS = 'gzip, deflate, br';
/** The types @koa/bodyparser reads as JSON (its `extendTypes.json` defaults), as `ctx.is` takes them. */
const JSON_TYPES = [
  'application/json',
  'application/json-patch+json',
  'application/vnd.api+json',
  'application/csp-report',
  'application/reports+json',
  'application/scim+json',
];

/** A request that sends a body: a non-zero Content-Length, or chunked. */
const hasBody = (ctx: Context): boolean =>
  ctx.req.headers['transfer-encoding'] !== undefined || Number(ctx.req.headers['content-length'] ?? 0) > 0;
const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * JSON bodies up to `limitBytes` (after decompression). The parser reads every body as UTF-8
 * whatever charset the request declares, so another charset is refused rather than misread
 * (RFC 8259 §8.1: JSON between systems is UTF-8). Decoding failures are the client's: an unknown
 * `Content-Encoding` is 415, a body that is not what its `Content-Encoding` says is 400.
 */
/** How long a JSON body may take to arrive. */
export const JSON_READ_TIMEOUT_MS = 60_000;

export function jsonBody(limitBytes: number, options: { readTimeoutMs?: number } = {}): Middleware {
  const readTimeoutMs = options.readTimeoutMs ?? JSON_READ_TIMEOUT_MS;
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: limitBytes,
    encoding: 'utf-8',
    onError: (err, ctx) => {
      throw bodyError(err, ctx);
    },
  });
  return (ctx, next) => {
    const coding = ctx.req.headers['content-encoding'];
    // Codings are case-insensitive (RFC 9110 §8.4.1); the parser only knows them in lower case.
    if (coding) ctx.req.headers['content-encoding'] = coding.trim().toLowerCase();
    if (!PARSED_METHODS.has(ctx.method)) return parse(ctx, next);
    if (hasBody(ctx) && !ctx.request.is(JSON_TYPES)) {
      // Without this, curl's default form type parsed as nothing and the route answered about a missing field.
      throw new UnsupportedMediaType(
        `Content-Type must be application/json, not ${JSON.stringify(ctx.request.type || 'none')}: send the body with -H 'Content-Type: application/json'`,
      );
    }
    const charset = ctx.request.charset.toLowerCase();
    if (charset && charset !== 'utf-8' && charset !== 'utf8') {
      throw new UnsupportedMediaType(`Content-Type charset ${charset} is not supported: send JSON as UTF-8`);
    }
    // The server lets a request last long (uploads); a JSON body that trickles is cut here.
    const timer = setTimeout(() => ctx.req.complete || ctx.req.destroy(), readTimeoutMs);
    return parse(ctx, () => {
      clearTimeout(timer);
      assertWellFormed(ctx.request.body, (ctx.request as { rawBody?: string }).rawBody);
      return next();
    }).finally(() => clearTimeout(timer));
  };
}

function bodyError(err: unknown, ctx: Context): unknown {
  const e = err as { status?: number; code?: unknown; message?: string };
  const coding = ctx.get('content-encoding');
  // `inflation` names codings it does not know with a bare 415 (no `expose`, so it would map to 500).
  if (e?.status === 415 && /Content-Encoding/.test(e.message ?? '')) {
    ctx.set('Accept-Encoding', CODINGS);
    return new UnsupportedMediaType(`Content-Encoding ${JSON.stringify(coding)} is not supported; send ${CODINGS} or none`);
  }
  // zlib's errors (Z_DATA_ERROR; Z_BUF_ERROR for a truncated stream; ERR__ERROR_FORMAT_* from
  // brotli) carry a code and no status, unlike raw-body's own http-errors.
  if (coding && coding !== 'identity' && e?.status === undefined && typeof e?.code === 'string') {
    return invalidInput(`request body could not be decoded as Content-Encoding ${JSON.stringify(coding)}: ${e.message ?? e.code}`);
  }
  return err;
}

/** The last middleware: nothing matched. */
export const notFoundFallback = () => async (ctx: Context) => {
  throw new AppError('not_found', `no route for ${ctx.method} ${ctx.path}`);
};
