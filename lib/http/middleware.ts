import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import { AppError } from '../domain/errors';
import type { Principal } from '../app/tenancy';

/** Koa plumbing shared by command-api and query-api. */

export type ApiState = { requestId: string; log: Logger; auth: Principal };
export type ApiContext = Context & { state: ApiState };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Request ids: taken from `X-Request-Id` when sane (a gateway's), else made; echoed back and logged. */
export const requestContext = (logger: Logger) => async (ctx: Context, next: Next) => {
  const incoming = ctx.get('x-request-id');
  const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
  ctx.state.requestId = requestId;
  ctx.state.log = logger.child({ request_id: requestId });
  ctx.set('X-Request-Id', requestId);
  const started = process.hrtime.bigint();
  try {
    await next();
  } finally {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    ctx.state.log.info(
      { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10, drive_id: ctx.state.auth?.driveId },
      'request',
    );
  }
};

/** Maps errors to the spec's bodies. Anything unexpected is a logged 500 that leaks nothing. */
export const errorHandler = () => async (ctx: Context, next: Next) => {
  try {
    await next();
  } catch (err) {
    const appError = toAppError(err);
    if (appError.status >= 500) ctx.state.log?.error({ err }, 'request failed');
    ctx.status = appError.status;
    ctx.body = appError.toBody();
  }
};

function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  // Koa and its body parser throw http-errors with `status` and `expose`.
  const e = err as { status?: number; expose?: boolean; message?: string; type?: string; name?: string };
  // @koa/bodyparser throws a bare SyntaxError with status 400 for malformed JSON.
  if (e?.name === 'SyntaxError' && e.status === 400) return new AppError('invalid_input', 'request body is not valid JSON');
  if (typeof e?.status === 'number' && e.status < 500 && e.expose) {
    if (e.status === 413) return new AppError('payload_too_large', 'request body is too large');
    if (e.status === 415) return new AppError('invalid_input', 'request body must be JSON (Content-Type: application/json)');
    if (e.type === 'entity.parse.failed') return new AppError('invalid_input', 'request body is not valid JSON');
    return new AppError('invalid_input', e.message ?? 'invalid request');
  }
  return new AppError('internal_error', 'internal error');
}

/** The last middleware: nothing matched. */
export const notFoundFallback = () => async (ctx: Context) => {
  throw new AppError('not_found', `no route for ${ctx.method} ${ctx.path}`);
};
