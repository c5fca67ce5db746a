import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { compositionWords } from '../../../lib/app/composition-words';
import type { ReadYourWrites } from '../../../lib/app/consistency';
import type { Authenticate, Principal } from '../../../lib/app/tenancy';
import type { WebSessions } from '../../../lib/app/web-sessions';
import { AppError, forbidden, notFound } from '../../../lib/domain/errors';
import { isUuid } from '../../../lib/domain/ids';
import { clientAddress } from '../../../lib/http/client-address';
import { consumeRateLimit } from '../../../lib/http/guards';
import { AppErrorWithHeaders, type ApiState } from '../../../lib/http/middleware';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { ReadQueries } from '../../../lib/ports/read-store';
import { loadProjectView, recentJobs, type ProjectView } from '../project-view';
import type { ProjectFilesReader } from '../../../lib/read-models/projects';
import { Html } from './html';
import { mountImportPage, type PageAnswer, type PageImportDeps } from './import-routes';
import { errorPage, loginPage, projectPage, signedInPage } from './pages';
import { mountSharePages } from './share-routes';
import { clearedSessionCookie, isForeignOrigin, readForm, SESSION_COOKIE, safeNext, sessionCookie } from './session';

/**
 * The project page behind a web sign-in, at the root of WEB_URL (which is assumed to have no path
 * of its own): `GET /{project_id}` and `GET /{project_id}/{short_id}` (a job's `project_url`),
 * `GET|POST /login`, `POST /logout`, `GET /` (a "signed in" landing), the share pages of
 * publications `GET /s/{slug}` (./share-routes.ts), and with `imports` the partner import page
 * `GET|POST /import?nonce=…`. Mounted outside the /v1
 * guards: it reads its own credentials (session cookie or `Authorization: Bearer`) and its own
 * small form bodies, and answers HTML, errors included.
 */

export type WebRoutesDeps = {
  authenticate: Authenticate;
  /** Where sign-ins are kept: the cookie holds only a session id. */
  sessions: WebSessions;
  /**
   * Per client address, the `POST /login`s and `/import`s it may make in the limiter's window
   * (each with a key of its own: `login:<address>`, `import:<address>`).
   */
  formLimiter: RateLimiterAbstract;
  /** Proxies in front whose `X-Forwarded-For` entry is believed (lib/http/client-address.ts); 0 unless told. */
  trustedProxyHops?: number;
  read: ReadQueries;
  /** How a project's files are read (`ProjectViewDeps`). */
  projectFiles?: ProjectFilesReader;
  blobs: BlobStore;
  /** WEB_URL: its origin is the only one a login form may be posted from; `https:` makes the cookie Secure. */
  webUrl: string;
  logger: Logger;
  /** Largest login form accepted; 8 KiB unless told. */
  maxFormBytes?: number;
  /**
   * What the partner import page writes with (the event store, balances); without it there is no
   * such page. With `admission`, an import is refused (429) while the drive has as many unfinished
   * jobs as it may.
   */
  imports?: PageImportDeps;
  /** Read-your-writes: a page waits for the signed-in token's writes, and the import page notes its own. */
  consistency?: ReadYourWrites;
};

/** First path segments that belong to the API mounted after this router, never to a page. */
const SHORT_ID = /^[0-9a-f]{5}$/i;

const HEADERS: Record<string, string> = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  // Project ids are in the page URLs: no other site gets them. Not `no-referrer`: under it a
  // browser sends `Origin: null` with the login form, and the origin check would refuse it.
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

export function createWebRoutes(deps: WebRoutesDeps): Router {
  const web = new URL(deps.webUrl);
  const secure = web.protocol === 'https:';
  const limitBytes = deps.maxFormBytes ?? 8 * 1024;
  const router = new Router({ sensitive: true });

  const page =
    (handler: (ctx: Context) => Promise<Html | PageAnswer | null>) =>
    async (ctx: Context): Promise<void> => {
      ctx.set(HEADERS);
      try {
        // null: the handler answered itself (a redirect, the login form again).
        const answer = await handler(ctx);
        if (answer) send(ctx, answer instanceof Html ? 200 : answer.status, answer instanceof Html ? answer : answer.body);
      } catch (err) {
        answerError(deps, ctx, err);
      }
    };

  /** The signed-in principal, or null after answering with a redirect to the login form (then to `back`). */
  async function signedIn(ctx: Context, back: string = ctx.path): Promise<Principal | null> {
    const header = ctx.get('authorization');
    // A client that sends its own token is not a browser that could sign in: a bad one is a 401 page.
    if (header) return deps.authenticate(header);
    const sessionId = ctx.cookies.get(SESSION_COOKIE);
    if (sessionId) {
      const who = await deps.sessions.principal(sessionId);
      if (who) return who;
      ctx.set('Set-Cookie', clearedSessionCookie(secure));
    }
    redirect(ctx, `/login?next=${encodeURIComponent(back)}`);
    return null;
  }

  /** Counts the request against its client address's limit for `what`; over it, a 429 page with Retry-After. */
  async function throttle(ctx: Context, what: 'login' | 'import'): Promise<void> {
    try {
      ctx.set(await consumeRateLimit(deps.formLimiter, `${what}:${clientAddress(ctx, deps.trustedProxyHops)}`));
    } catch (err) {
      if (!(err instanceof AppErrorWithHeaders && err.code === 'rate_limit_exceeded')) throw err;
      const tries = what === 'login' ? 'sign-in attempts' : 'imports';
      const message = `Too many ${tries} from your address. Try again in ${err.headers['Retry-After']} seconds.`;
      throw new AppErrorWithHeaders(err.code, message, err.headers);
    }
  }

  router.get(
    '/login',
    page(async (ctx) => loginPage({ next: safeNext(ctx.query.next) ?? '/' })),
  );

  router.post(
    '/login',
    page(async (ctx) => {
      refuseForeignOrigin(ctx, web.origin);
      await throttle(ctx, 'login').catch((err) => closeUnread(ctx, err));
      const form = await readFormClosingOnError(ctx, limitBytes);
      const next = safeNext(form.get('next')) ?? '/';
      const token = (form.get('token') ?? '').trim();
      let who: Principal;
      try {
        who = await deps.authenticate(`Bearer ${token}`);
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'unauthorized')) throw err;
        send(ctx, 401, loginPage({ next, message: 'That token is not valid, or it was revoked.' }));
        return null;
      }
      const session = await deps.sessions.start(who);
      ctx.set('Set-Cookie', sessionCookie(session.id, session.maxAgeSeconds, secure));
      return redirect(ctx, next);
    }),
  );

  router.post(
    '/logout',
    page(async (ctx) => {
      refuseForeignOrigin(ctx, web.origin);
      const sessionId = ctx.cookies.get(SESSION_COOKIE);
      if (sessionId) await deps.sessions.end(sessionId);
      ctx.set('Set-Cookie', clearedSessionCookie(secure));
      return redirect(ctx, '/login');
    }),
  );

  router.get(
    '/',
    page(async (ctx) => {
      const who = await signedIn(ctx);
      return who && signedInPage(who);
    }),
  );

  if (deps.imports) {
    mountImportPage(router, deps.imports, {
      page,
      signedIn,
      redirect,
      throttle: (ctx) => throttle(ctx, 'import'),
      readPostedForm: async (ctx) => {
        refuseForeignOrigin(ctx, web.origin);
        await throttle(ctx, 'import').catch((err) => closeUnread(ctx, err));
        return readFormClosingOnError(ctx, limitBytes);
      },
      wrote: (tokenId) => deps.consistency?.afterWrite(tokenId),
    });
  }

  /** The principal of the request's sign-in, if any: unlike `signedIn`, no redirect. */
  async function viewer(ctx: Context): Promise<Principal | null> {
    const header = ctx.get('authorization');
    const sessionId = ctx.cookies.get(SESSION_COOKIE);
    const who = header ? await deps.authenticate(header) : sessionId ? await deps.sessions.principal(sessionId) : null;
    if (sessionId && !header && !who) ctx.set('Set-Cookie', clearedSessionCookie(secure));
    if (who) {
      (ctx.state as Partial<ApiState>).auth = who;
      const waiting = deps.consistency?.beforeRead(who.tokenId);
      if (waiting) await waiting;
    }
    return who;
  }
  mountSharePages(router, deps, { page, redirect, viewer });

  const projectRoute = page(async (ctx) => {
    const who = await signedIn(ctx);
    if (!who) return null;
    // For the access log, as the API's guard records it.
    (ctx.state as Partial<ApiState>).auth = who;
    const waiting = deps.consistency?.beforeRead(who.tokenId);
    if (waiting) await waiting;
    return renderProject(deps, who, ctx.params.project_id, ctx.params.short_id);
  });
  // Only a project id makes a page: every other path (`/v1/...` in any case, `/metrics` on a service
  // without metrics, a typo) goes on to the API, whose 404 says `no route` in its own error shape.
  const pageOrApi = (ctx: Context, next: Next) => (isUuid(ctx.params.project_id) ? projectRoute(ctx) : next());
  router.get('/:project_id', pageOrApi);
  router.get('/:project_id/:short_id', pageOrApi);
  return router;
}

async function renderProject(deps: WebRoutesDeps, who: Principal, projectId: string, shortId: string | undefined): Promise<Html> {
  if (!isUuid(projectId)) throw notFound('There is no project at this address.');
  if (shortId !== undefined && !SHORT_ID.test(shortId)) throw notFound('There is no such composition in this project.');
  let view: ProjectView;
  try {
    view = await loadProjectView({ read: deps.read, store: deps.imports?.store, projectFiles: deps.projectFiles }, who, projectId);
  } catch (err) {
    // Its name or anything else of it would tell another drive's member what it holds.
    if (err instanceof AppError && err.code === 'forbidden') throw forbidden('This is not a project of your drive.');
    if (err instanceof AppError && err.code === 'not_found') throw notFound('There is no project at this address.');
    throw err;
  }
  const focus = shortId === undefined ? null : view.compositions.find((c) => c.short_id === shortId.toLowerCase());
  const jobs = await recentJobs(deps.read, view.project);
  // A job's project_url names its composition from the 201 on: until the job makes it, the page shows the project.
  if (
    focus === undefined &&
    !jobs.some((j) => (j.job_state === 'queued' || j.job_state === 'running') && String(j.project_url).endsWith(`/${shortId}`))
  ) {
    throw notFound(`There is no composition ${shortId} in this project.`);
  }
  const ordered = focus ? [focus, ...view.compositions.filter((c) => c !== focus)] : view.compositions;
  const compositions = await Promise.all(
    ordered.map(async (composition) => ({ composition, words: await compositionWords(deps.blobs, view.project, composition.clips) })),
  );
  return projectPage({ view, compositions, focusId: focus?.id ?? null, jobs });
}

function redirect(ctx: Context, location: string): null {
  ctx.status = 303;
  ctx.set('Location', location);
  ctx.type = 'text/plain';
  ctx.body = `See ${location}`;
  return null;
}

function refuseForeignOrigin(ctx: Context, origin: string): void {
  if (isForeignOrigin(ctx, origin)) {
    ctx.set('Connection', 'close');
    throw forbidden('This form was posted from another site.');
  }
}

async function readFormClosingOnError(ctx: Context, limitBytes: number): Promise<URLSearchParams> {
  try {
    return await readForm(ctx, { limitBytes });
  } catch (err) {
    return closeUnread(ctx, err);
  }
}

/** Rethrows `err`, closing the connection when the request's body was not read whole. */
function closeUnread(ctx: Context, err: unknown): never {
  // What is left of the body must not be read as the next request on this connection.
  if (!ctx.req.complete) ctx.set('Connection', 'close');
  throw err;
}

function send(ctx: Context, status: number, body: Html): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = body.value;
}

const TITLES = new Map<number, string>([
  [400, 'Bad request'],
  [401, 'Not signed in'],
  [402, 'No media seconds left'],
  [403, 'Forbidden'],
  [404, 'Not found'],
  [410, 'Gone'],
  [413, 'Too large'],
  [415, 'Unsupported form'],
  [429, 'Too many requests'],
  [500, 'Server error'],
]);

function answerError(deps: WebRoutesDeps, ctx: Context, err: unknown): void {
  const known = err instanceof AppError && err.status < 500;
  if (!known) ((ctx.state as Partial<ApiState>).log ?? deps.logger).error({ err }, 'web page failed');
  const status = known ? err.status : err instanceof AppError ? err.status : 500;
  const message = known ? err.message : 'Something went wrong on our side. Try again in a moment.';
  if (status === 401) ctx.set('WWW-Authenticate', 'Bearer');
  if (err instanceof AppErrorWithHeaders) ctx.set(err.headers);
  // A failed page must not keep what a half-done handler set (a redirect's Location).
  ctx.remove('Location');
  send(ctx, status, errorPage(status, TITLES.get(status) ?? 'Unavailable', message));
}
