import type Router from '@koa/router';
import type { Context } from 'koa';
import { publicationBySlug, type PublicationRead } from '../../../lib/app/published';
import type { Principal } from '../../../lib/app/tenancy';
import { forbidden, notFound } from '../../../lib/domain/errors';
import { SHARE_PATH, shareUrl, SLUG } from '../../../lib/domain/publication';
import { accessOf, downloadFilename, indexable } from '../../../lib/domain/publication-access';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { ReadQueries } from '../../../lib/ports/read-store';
import { PROJECTS, type ProjectDoc } from '../../../lib/read-models/projects';
import { serveBlob } from '../downloads';
import type { Html } from './html';
import type { PageHelpers } from './import-routes';
import { sharePage } from './share-pages';

/**
 * The share page of a publication (issue 21), `GET {WEB_URL}/s/{slug}`, with the two routes its
 * player loads from the same origin: `/s/{slug}/media` (the render, with Range, inline) and
 * `/s/{slug}/captions.vtt` (`text/vtt`). Page-scoped rather than signed download URLs: a page
 * left open for hours keeps playing (a signed URL expires), and the media is refused exactly
 * when the page is.
 *
 * Access (lib/domain/publication-access.ts): `public` and `unlisted` for anyone with the link;
 * `drive` for a signed-in member of the drive, `private` for the publisher's own sign-in. Without
 * a sign-in the page sends the browser to the login form (back here after); a signed-in
 * stranger gets a 403 page that names nothing of the publication. An unknown slug is a 404 page.
 */

export type ShareRoutesDeps = { readonly read: ReadQueries; readonly blobs: BlobStore; readonly webUrl: string };

export type ShareHelpers = Pick<PageHelpers, 'page' | 'redirect'> & {
  /** The signed-in principal of the request (session cookie or Bearer header), or null: no redirect. */
  viewer: (ctx: Context) => Promise<Principal | null>;
};

/** The page's policy plus its own media: the player and its captions track load from this origin only. */
const SHARE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; media-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export function mountSharePages(router: Router, deps: ShareRoutesDeps, { page, redirect, viewer }: ShareHelpers): void {
  const path = `${SHARE_PATH}/:slug`;

  router.get(
    path,
    page(async (ctx) => {
      const found = await visible(deps, ctx, viewer);
      if (found === 'sign_in') return redirect(ctx, `/login?next=${encodeURIComponent(ctx.path)}`);
      ctx.set('Content-Security-Policy', SHARE_CSP);
      if (!indexable(found.doc.started.access_level)) ctx.set('X-Robots-Tag', 'noindex');
      return renderPage(deps, found);
    }),
  );

  router.get(
    `${path}/media`,
    page(async (ctx) => {
      const found = await playable(deps, ctx, viewer);
      const r = found.doc.render!;
      const blob = await deps.blobs.open(r.blob_key);
      if (!blob) throw notFound('The file of this publication is no longer available.');
      const filename = downloadFilename(r.title, found.doc.started.media_type);
      serveBlob(ctx, { blob: r.blob_key, filename, contentType: r.content_type }, blob, 'inline');
      return null;
    }),
  );

  router.get(
    `${path}/captions.vtt`,
    page(async (ctx) => {
      const found = await playable(deps, ctx, viewer);
      const blob = await deps.blobs.open(found.doc.render!.captions_blob_key);
      if (!blob) throw notFound('The captions of this publication are no longer available.');
      ctx.status = 200;
      ctx.type = 'text/vtt; charset=utf-8';
      if (ctx.method !== 'HEAD') ctx.body = blob.read();
      ctx.length = blob.size;
      return null;
    }),
  );
}

/** The publication behind the URL if this viewer may see it; `sign_in` when a sign-in could let them. */
async function visible(deps: ShareRoutesDeps, ctx: Context, viewer: ShareHelpers['viewer']): Promise<PublicationRead | 'sign_in'> {
  const slug = ctx.params.slug;
  const found = SLUG.test(slug) ? await publicationBySlug(deps.read, slug) : null;
  if (!found) throw notFound('There is nothing published at this address.');
  const verdict = accessOf({ ...found.doc.started, drive_id: found.doc.drive_id }, await viewer(ctx));
  if (verdict === 'forbidden') throw forbidden('You do not have access to this page. Ask its publisher to share it with you.');
  return verdict === 'sign_in' ? 'sign_in' : found;
}

/** As `visible`, for the player's requests: no redirects, and only once there is a render. */
async function playable(deps: ShareRoutesDeps, ctx: Context, viewer: ShareHelpers['viewer']): Promise<PublicationRead> {
  const found = await visible(deps, ctx, viewer);
  if (found === 'sign_in') throw forbidden('You do not have access to this page. Sign in first.');
  if (found.doc.render === null) throw notFound('This has not been published yet.');
  return found;
}

async function renderPage(deps: ShareRoutesDeps, publication: PublicationRead): Promise<Html> {
  const project = (await deps.read.get(PROJECTS, publication.doc.project_id)) as ProjectDoc | null;
  const page = shareUrl(deps.webUrl, publication.doc.slug);
  return sharePage({
    publication,
    urls: { page, media: `${page}/media`, captions: `${page}/captions.vtt` },
    partner: project?.partner ?? null,
  });
}
