import type { Context, Next } from 'koa';
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../domain/errors';
import type { Authenticate } from '../app/tenancy';

/** Every /v1 route needs a valid token; the principal lands on `ctx.state.auth`. */
export const authenticate = (auth: Authenticate) => async (ctx: Context, next: Next) => {
  ctx.state.auth = await auth(ctx.get('authorization') || undefined);
  await next();
};

/**
 * Per-token rate limit over a fixed one-minute window (rate-limiter-flexible: in memory for one
 * process, MongoDB-backed when the APIs run as several replicas).
 */
export const rateLimit = (limiter: RateLimiterAbstract) => {
  const limit = String(limiter.points);
  const setHeaders = (ctx: Context, r: RateLimiterRes) => {
    ctx.set('X-RateLimit-Limit', limit);
    ctx.set('X-RateLimit-Remaining', String(Math.max(0, r.remainingPoints)));
    ctx.set('X-RateLimit-Consumed', String(r.consumedPoints));
  };
  return async (ctx: Context, next: Next) => {
    let res: RateLimiterRes;
    try {
      res = await limiter.consume(ctx.state.auth.tokenId);
    } catch (rejection) {
      if (rejection instanceof Error) throw rejection; // the limiter's store failed: not a 429
      const r = rejection as RateLimiterRes;
      setHeaders(ctx, r);
      ctx.set('Retry-After', String(Math.max(1, Math.ceil(r.msBeforeNext / 1000))));
      throw new AppError('rate_limit_exceeded', `rate limit of ${limit} requests per minute exceeded; retry after the Retry-After seconds`);
    }
    setHeaders(ctx, res);
    await next();
  };
};
