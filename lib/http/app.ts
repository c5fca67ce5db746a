import Router from '@koa/router';
import Koa from 'koa';
import type { RequestListener } from 'node:http';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ReadYourWrites } from '../app/consistency';
import type { Authenticate } from '../app/tenancy';
import { AppError } from '../domain/errors';
import type { Metrics } from '../observability/metrics';
import { expressLane, mountLaneRoutes, type LaneRoute } from './express-lane';
import { consistencyGuard } from './consistency';
import { authenticate, rateLimit } from './guards';
import { errorHandler, jsonBody, notFoundFallback, observeDuration, requestContext, wellEscapedQuery } from './middleware';

/**
 * The pipeline both APIs share, in this order: request duration metric, request id and access
 * log, error mapping, the unauthenticated operator endpoints (/healthz, /readyz, /metrics),
 * token, rate limit, JSON body (size-limited), the API's routes under /v1, then 404. The hottest
 * routes (`lane`) are served ahead of Koa by the express lane, through the same steps, when a
 * request is in the plain shape (see express-lane.ts). `createApiApp` never listens (STYLE §6).
 */

/** What a server needs of an app: its request listener (a Koa app is one too). */
export type HttpApp = { callback(): RequestListener };

export type ApiRoutes = {
  /** The hottest routes: served by the express lane, and mounted under /v1 for every other request. */
  lane?: readonly LaneRoute[];
  /** The API's other routes under /v1, behind the guards. */
  mount?: (v1: Router) => void;
  /**
   * Routes that bring their own credentials and bodies (signed upload URLs, the web pages with
   * their session cookie): they take no token, no rate limit and no JSON body, and run before
   * the /v1 guards.
   */
  outside?: readonly Router[];
};

export type ApiAppDeps = {
  logger: Logger;
  authenticate: Authenticate;
  limiter: RateLimiterAbstract;
  maxRequestBytes: number;
  /** The service's metrics: requests are timed into it and `GET /metrics` serves its registry. */
  metrics?: Pick<Metrics, 'registry' | 'httpRequestDuration'>;
  /** Resolves when the service can take traffic (stores reachable, consumers running); rejects with the reason otherwise. */
  ready?: () => Promise<void>;
  /**
   * Read-your-writes (lib/app/consistency.ts): a `write` app notes each 2xx of a command for its
   * token, a `read` app waits for the token's writes to be projected before it answers.
   */
  consistency?: { readonly role: 'write' | 'read'; readonly hooks: ReadYourWrites };
};

/** A readiness check that hangs is a failed one; answering late would only stack probes up. */
const READY_TIMEOUT_MS = 2_000;

export function createApiApp(deps: ApiAppDeps, routes: ApiRoutes): HttpApp {
  const koa = createKoaApp(deps, routes);
  const lane = routes.lane ?? [];
  return { callback: () => expressLane(deps, lane, koa.callback()) };
}

function createKoaApp(deps: ApiAppDeps, { lane = [], mount, outside = [] }: ApiRoutes): Koa {
  const app = new Koa();
  app.proxy = true;
  app.silent = true;
  // Case-sensitive like the prefix's own match, so that a path either reaches a route through
  // the guards or reaches no route at all (a `/V1/...` once matched its route and skipped auth).
  const v1 = new Router({ prefix: '/v1', sensitive: true });
  const [auth, limit, body] = [authenticate(deps.authenticate), rateLimit(deps.limiter), jsonBody(deps.maxRequestBytes)];
  const fence = consistencyGuard(deps.consistency);
  const route = fence
    ? async (ctx: Koa.Context, next: Koa.Next) => {
        const tokenId = (ctx.state.auth as { tokenId: string }).tokenId;
        const waiting = fence.before(tokenId);
        if (waiting) await waiting;
        await next();
        const noted = fence.after(tokenId, ctx.method, ctx.status);
        if (noted) await noted;
      }
    : (_ctx: Koa.Context, next: Koa.Next) => next();
  // One router layer rather than four: the router matches each layer's path again and builds
  // its params on every request.
  v1.use((ctx, next) => auth(ctx, () => limit(ctx, () => body(ctx, () => route(ctx, next)))));
  mountLaneRoutes(v1, lane);
  mount?.(v1);

  if (deps.metrics) app.use(observeDuration(deps.metrics.httpRequestDuration));
  app.use(requestContext(deps.logger));
  app.use(errorHandler());
  app.use(wellEscapedQuery());
  app.use(operatorRoutes(deps).routes());
  for (const router of outside) app.use(router.routes());
  app.use(v1.routes());
  app.use(notFoundFallback());
  return app;
}

function operatorRoutes(deps: ApiAppDeps): Router {
  const ops = new Router({ sensitive: true });
  // Liveness only: a store outage must not make the orchestrator restart healthy processes.
  ops.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  ops.get('/readyz', async (ctx) => {
    const reason = await failureOf(deps.ready);
    if (reason !== null) throw new AppError('unavailable', reason);
    ctx.body = { status: 'ready' };
  });
  const metrics = deps.metrics;
  if (metrics) {
    ops.get('/metrics', async (ctx) => {
      ctx.type = metrics.registry.contentType;
      ctx.body = await metrics.registry.metrics();
    });
  }
  return ops;
}

async function failureOf(check: (() => Promise<void>) | undefined): Promise<string | null> {
  if (!check) return null;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`readiness check did not answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    clearTimeout(timer);
  }
}
