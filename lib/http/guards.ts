import type { Context, Next } from 'koa';
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { AppErrorWithHeaders } from './middleware';
import type { Authenticate } from '../app/tenancy';

/** Every /v1 route needs a valid token; the principal lands on `ctx.state.auth`. */
export const authenticate = (auth: Authenticate) => async (ctx: Context, next: Next) => {
  ctx.state.auth = await auth(ctx.get('authorization') || undefined);
  await next();
};

/**
 * Per-token rate limit over a fixed one-minute window (rate-limiter-flexible: in memory for one
 * process, MongoDB-backed when the APIs run as several replicas). Resolves to the headers that
 * say what is left; over the limit, throws a 429 carrying them and Retry-After.
 */
export async function consumeRateLimit(
  limiter: RateLimiterAbstract,
  key: string,
  window: 'minute' | 'hour' = 'minute',
): Promise<Record<string, string>> {
  const limit = String(limiter.points);
  const headers = (r: RateLimiterRes) => ({
    'X-RateLimit-Limit': limit,
    'X-RateLimit-Remaining': String(Math.max(0, r.remainingPoints)),
    'X-RateLimit-Consumed': String(r.consumedPoints),
  });
  try {
    return headers(await limiter.consume(key));
  } catch (rejection) {
    if (rejection instanceof Error) throw rejection; // the limiter's store failed: not a 429
    const r = rejection as RateLimiterRes;
    throw new AppErrorWithHeaders(
      'rate_limit_exceeded',
      `rate limit of ${limit} requests per ${window} exceeded; retry after the Retry-After seconds`,
      { ...headers(r), 'Retry-After': String(Math.max(1, Math.ceil(r.msBeforeNext / 1000))) },
    );
  }
}

export const rateLimit = (limiter: RateLimiterAbstract) => async (ctx: Context, next: Next) => {
  ctx.set(await consumeRateLimit(limiter, ctx.state.auth.tokenId));
  await next();
};
