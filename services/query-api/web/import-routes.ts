import type Router from '@koa/router';
import type { Context } from 'koa';
import type { UrlImportDeps } from '../../../lib/app/import';
import { importLinks } from '../../../lib/app/import-link';
import type { Principal } from '../../../lib/app/tenancy';
import { AppError, notFound } from '../../../lib/domain/errors';
import type { ApiState } from '../../../lib/http/middleware';
import { admit } from '../../../lib/http/admission';
import type { Admission } from '../../../lib/app/admission';
import type { Html } from './html';
import { importPage, linkGoneMessage, NO_SUCH_LINK } from './import-pages';
import { errorPage } from './pages';

/** What an import from the page needs: the import's own deps, and admission control when the service has it. */
export type PageImportDeps = UrlImportDeps & { readonly admission?: Admission };

/** A page with a status other than 200 (a spent import link's 410). */
export type PageAnswer = { readonly status: number; readonly body: Html };

/** What the import page borrows from the other pages: answering, signing in, redirects and posted forms. */
export type PageHelpers = {
  page: (handler: (ctx: Context) => Promise<Html | PageAnswer | null>) => (ctx: Context) => Promise<void>;
  /** The signed-in principal, or null after redirecting to the login form, which then returns to `back`. */
  signedIn: (ctx: Context, back?: string) => Promise<Principal | null>;
  redirect: (ctx: Context, location: string) => null;
  /** Counts the request against its client address's import limit; throws a 429 over it. */
  throttle: (ctx: Context) => Promise<void>;
  /** The form of a POST, refused when another site's page posted it (as the login form is), and throttled as `throttle` does. */
  readPostedForm: (ctx: Context) => Promise<URLSearchParams>;
  /** Notes the token's write (read-your-writes): the page it goes to next reflects it. */
  wrote: (tokenId: string) => void | Promise<void>;
};

/**
 * `GET /import?nonce=…` shows a partner's files with an Import button; `POST /import` (form field
 * `nonce`) imports them into a new project of the signed-in user's drive and goes to it (303 to
 * its `project_url`). A link that was used (by anyone) or expired is a 410 page on both, and
 * shows no project; a nonce that names no link is a 404 page. Signing in comes first, so a
 * stranger learns nothing of a link.
 */
export function mountImportPage(
  router: Router,
  imports: PageImportDeps,
  { page, signedIn, redirect, throttle, readPostedForm, wrote }: PageHelpers,
): void {
  const links = importLinks(imports);
  const back = (nonce: string) => `/import?nonce=${encodeURIComponent(nonce)}`;
  router.get(
    '/import',
    page(async (ctx) => {
      await throttle(ctx);
      const nonce = typeof ctx.query.nonce === 'string' ? ctx.query.nonce : '';
      const who = await signedIn(ctx, back(nonce));
      if (!who) return null;
      (ctx.state as Partial<ApiState>).auth = who;
      const { status, link } = await links.read(nonce, imports.clock.now());
      if (status === 'used' || status === 'expired') return gone(status);
      if (status === 'unknown' || !link) throw notFound(NO_SUCH_LINK);
      return importPage({ who, link });
    }),
  );
  router.post(
    '/import',
    page(async (ctx) => {
      const form = await readPostedForm(ctx);
      const nonce = (form.get('nonce') ?? '').trim();
      // The session ended: the page again after signing in, rather than a lost POST.
      const who = await signedIn(ctx, back(nonce));
      if (!who) return null;
      const state = ctx.state as Partial<ApiState>;
      state.auth = who;
      // Before the link is used: a refused import leaves it for later, or for someone else.
      await admit(
        imports.admission,
        who.driveId,
        ({ unfinished }) =>
          `Your drive has ${unfinished} jobs queued or running, the most it may have. Try again in a few minutes, once some have finished.`,
      );
      try {
        const started = await links.use(who, nonce, state.requestId ?? '');
        await wrote(who.tokenId);
        state.log?.info({ project_id: started.project_id, job_id: started.job_id }, 'import link used');
        return redirect(ctx, started.project_url);
      } catch (err) {
        const linkState = err instanceof AppError && err.code === 'conflict' ? err.options.extra?.state : undefined;
        if (linkState === 'used' || linkState === 'expired') return gone(linkState);
        if (err instanceof AppError && err.code === 'not_found') throw notFound(NO_SUCH_LINK);
        throw err;
      }
    }),
  );
}

const gone = (state: 'used' | 'expired'): PageAnswer => ({ status: 410, body: errorPage(410, 'Gone', linkGoneMessage(state)) });
