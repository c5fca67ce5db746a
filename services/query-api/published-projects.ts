import { signedExpiry } from '../../lib/app/signed-urls';
import type Router from '@koa/router';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { commandHandler } from '../../lib/app/command-handler';
import { signDownloadUrl } from '../../lib/app/downloads';
import { publicationBySlug, readCaptions } from '../../lib/app/published';
import type { Principal } from '../../lib/app/tenancy';
import { AppError, conflict, forbidden, notFound } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import { formatDuration, SLUG } from '../../lib/domain/publication';
import { accessOf, downloadFilename, publishTypeOf } from '../../lib/domain/publication-access';
import { driveDecider } from '../../lib/domain/tenancy';
import { consumeRateLimit } from '../../lib/http/guards';
import type { ApiContext } from '../../lib/http/middleware';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { Clock } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadQueries } from '../../lib/ports/read-store';
import type { PublicationDoc } from '../../lib/read-models/publications';

/**
 * GET /published_projects/{publishedProjectSlug} (partner access; issue 21): a publication's metadata, its
 * subtitles and a signed download URL of its render.
 *
 * Checked in this order, each failure saying nothing the caller may not know: the token (the
 * /v1 guard: 401) and its per-token limit, this route's per-user limit (429), partner access of
 * the token's drive (403, read from the drive's stream as POST /edit_in_descript/schema does),
 * the slug (404, also when malformed), who may see it (403: lib/domain/publication-access.ts),
 * then a render to show (409 `conflict` with `state` `processing` or `failed`). A republish in
 * progress serves the previous render.
 */

export type PublishedProjectsDeps = {
  read: ReadQueries;
  store: EventStore;
  blobs: BlobStore;
  clock: Clock;
  /** SIGNING_SECRET: what the download URL is signed with (served by downloads.ts). */
  downloadSecret: string;
  published: PublishedProjectsSettings;
};

export type PublishedProjectsSettings = {
  /** Per user, the requests of this route in its window (PUBLISHED_PROJECTS_RATE_LIMIT_PER_HOUR). */
  readonly limiter: RateLimiterAbstract;
  /** BASE_URL: where the download URLs point (the API's `/downloads`). */
  readonly baseUrl: string;
  /** DOWNLOAD_URL_TTL. */
  readonly downloadUrlTtlSeconds: number;
};

export function mountPublishedProjects(v1: Router, deps: PublishedProjectsDeps): void {
  const drives = commandHandler(deps.store, driveDecider, streams.drive);
  v1.get('/published_projects/:publishedProjectSlug', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    // This route's headers say what is left of the tighter, per-user hourly budget.
    ctx.set(await consumeRateLimit(deps.published.limiter, `user:${auth.userId}`, 'hour'));
    const { state: drive } = await drives.load(auth.driveId);
    if (!drive.exists || !drive.settings.partner)
      throw forbidden('this drive has no partner access; ask the service operator to enable it');
    ctx.body = await publishedProject(deps, auth, ctx.params.publishedProjectSlug);
  });
}

async function publishedProject(deps: PublishedProjectsDeps, who: Principal, slug: string): Promise<Record<string, unknown>> {
  const found = SLUG.test(slug) ? await publicationBySlug(deps.read, slug) : null;
  if (!found) throw notFound(`there is no published project ${JSON.stringify(slug.slice(0, 40))}`);
  const { doc, state } = found;
  if (accessOf({ ...doc.started, drive_id: doc.drive_id }, who) !== 'allowed') {
    throw forbidden(
      `published project ${slug} is ${doc.started.access_level === 'private' ? 'private to its publisher' : 'visible to its drive only'}`,
    );
  }
  if (doc.render === null) {
    throw state === 'failed'
      ? conflict(`published project ${slug} failed to render; publish it again`, 'failed')
      : conflict(`published project ${slug} is still being published; try again shortly`, 'processing');
  }
  return render(deps, doc, doc.render);
}

async function render(deps: PublishedProjectsDeps, doc: PublicationDoc, r: NonNullable<PublicationDoc['render']>) {
  const subtitles = await readCaptions(deps.blobs, r.captions_blob_key);
  if (subtitles === null)
    throw new AppError('internal_error', `the captions of published project ${doc.slug} are missing from the blob store`);
  // Whole seconds, as the URL's `expires` says: the body and the URL name the same instant.
  const expiresAt = signedExpiry(deps.clock.now(), deps.published.downloadUrlTtlSeconds * 1000);
  const mediaType = doc.started.media_type;
  const target = { blob: r.blob_key, filename: downloadFilename(r.title, mediaType), contentType: r.content_type };
  return {
    project_id: doc.project_id,
    publish_type: publishTypeOf(mediaType),
    privacy: doc.started.access_level,
    metadata: {
      title: r.title,
      duration_seconds: r.duration_seconds,
      duration_formatted: formatDuration(r.duration_seconds),
      published_at: doc.published_at,
      published_by: { first_name: doc.started.published_by.first_name, last_name: doc.started.published_by.last_name },
    },
    subtitles,
    download_url: signDownloadUrl(deps.published.baseUrl, deps.downloadSecret, target, expiresAt),
    download_url_expires_at: expiresAt.toISOString(),
  };
}
