import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Authenticate } from '../app/tenancy';
import { authenticate, rateLimit } from './guards';
import { errorHandler, notFoundFallback, requestContext } from './middleware';

/**
 * The pipeline both APIs share, in this order: request id and access log, error mapping,
 * unauthenticated health check, token, rate limit, JSON body (size-limited), the API's routes
 * under /v1, then 404. `createApiApp` never listens (STYLE §6).
 */

export type ApiAppDeps = {
  logger: Logger;
  authenticate: Authenticate;
  limiter: RateLimiterAbstract;
  maxRequestBytes: number;
  /** Resolves when the service can take traffic (stores reachable); rejects otherwise. */
  health?: () => Promise<void>;
};

export function createApiApp(deps: ApiAppDeps, mount: (v1: Router) => void): Koa {
  const app = new Koa();
  app.proxy = true;
  app.silent = true;
  const v1 = new Router({ prefix: '/v1' });
  v1.use(authenticate(deps.authenticate), rateLimit(deps.limiter));
  v1.use(bodyParser({ enableTypes: ['json'], jsonLimit: deps.maxRequestBytes, encoding: 'utf-8' }));
  mount(v1);

  app.use(requestContext(deps.logger));
  app.use(errorHandler());
  app.use(async (ctx, next) => {
    if (ctx.path !== '/healthz') return next();
    await (deps.health?.() ?? Promise.resolve());
    ctx.body = { status: 'ok' };
  });
  app.use(v1.routes());
  app.use(v1.allowedMethods({ throw: false }));
  app.use(notFoundFallback());
  return app;
}
