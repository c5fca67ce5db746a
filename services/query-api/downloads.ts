import { safeFileName } from '../../lib/domain/file-name';
import Router from '@koa/router';
import type { Context } from 'koa';
import rangeParser from 'range-parser';
import { DOWNLOADS_PATH, verifyDownload, type DownloadTarget } from '../../lib/app/downloads';
import { forbidden, notFound } from '../../lib/domain/errors';
import type { BlobReader, BlobStore } from '../../lib/ports/blob-store';
import type { Clock } from '../../lib/ports/clock';

/**
 * `GET` and `HEAD {BASE_URL}/downloads/<id>`: a signed download URL (lib/app/downloads.ts) served
 * from the blob store as a stream, never read whole. One byte range per request (`Range`, 206 with
 * `Content-Range`; 416 outside the file; several ranges get the whole file, which RFC 9110
 * allows), `If-Range`, `ETag` and `Last-Modified` with `If-None-Match` (304), the signed type and
 * an attachment file name (RFC 6266 `filename*` for any Unicode, through Koa's `attachment`).
 * Tampered or expired: 403 with the API's error body. Outside the API's token guard: the URL is
 * the credential.
 */

export type DownloadRouteDeps = { readonly secret: string; readonly blobs: BlobStore; readonly clock: Clock; readonly prefix?: string };

/** A type that is not one (`text/html; charset=…` smuggling, garbage) is sent as bytes. */
const MEDIA_TYPE = /^[A-Za-z0-9][\w.+-]{0,126}\/[A-Za-z0-9][\w.+-]{0,126}$/;

export function createDownloadRoutes(deps: DownloadRouteDeps): Router {
  const router = new Router({ prefix: deps.prefix ?? '/v1', sensitive: true });
  // @koa/router answers HEAD with a GET route; the handler sends no body for it.
  router.get(`${DOWNLOADS_PATH}/:id`, async (ctx) => {
    const target = authorise(deps, ctx);
    const blob = await deps.blobs.open(target.blob);
    if (!blob) throw notFound('the file of this download is no longer available');
    serveBlob(ctx, target, blob);
  });
  return router;
}

function authorise(deps: DownloadRouteDeps, ctx: Context): DownloadTarget {
  const verdict = verifyDownload(ctx.params.id, ctx.querystring, { secret: deps.secret, now: deps.clock.now() });
  if (verdict.ok) return verdict.target;
  if (verdict.reason === 'expired') throw forbidden(`the download URL expired at ${verdict.expiresAt.toISOString()}`);
  throw forbidden('the download URL is not valid: its signature does not match its path and parameters');
}

/**
 * Sends `blob` as `target` says, ranges and validators included. `inline` (a page's player) names
 * the file without asking the browser to save it.
 */
export function serveBlob(
  ctx: Context,
  target: DownloadTarget,
  blob: BlobReader,
  disposition: 'attachment' | 'inline' = 'attachment',
): void {
  ctx.status = 200;
  // Made safe again here: URLs signed before names were (a "/" cut the name, a lone surrogate failed the header).
  ctx.attachment(safeFileName(target.filename, 'download'), { type: disposition });
  ctx.type = MEDIA_TYPE.test(target.contentType) ? target.contentType : 'application/octet-stream';
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('Cache-Control', 'private, no-transform');
  const etag = `"${blob.size.toString(16)}-${blob.modified.getTime().toString(16)}"`;
  ctx.set('ETag', etag);
  ctx.lastModified = blob.modified;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  const range = rangeOf(ctx, blob.size, etag);
  if (range === 'unsatisfiable') {
    ctx.status = 416;
    ctx.set('Content-Range', `bytes */${blob.size}`);
    ctx.body = ''; // not null: Koa would make that a 204
    ctx.status = 416;
    return;
  }
  if (range) {
    ctx.status = 206;
    ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${blob.size}`);
  }
  const length = range ? range.end - range.start + 1 : blob.size;
  // HEAD: the headers of the GET and no body (opening the stream would hold a descriptor nobody reads).
  if (ctx.method !== 'HEAD') ctx.body = blob.read(range ?? undefined);
  ctx.length = length; // after the body: a stream body drops any length set before it
}

/** The one range to send, null for the whole file, or `unsatisfiable` (416). */
function rangeOf(ctx: Context, size: number, etag: string): { start: number; end: number } | null | 'unsatisfiable' {
  const header = ctx.get('Range');
  if (!header) return null;
  // A range of a representation the client no longer has would mix two files: send it whole.
  const ifRange = ctx.get('If-Range');
  if (ifRange && ifRange !== etag) return null;
  if (size === 0) return 'unsatisfiable';
  const ranges = rangeParser(size, header, { combine: true });
  if (ranges === -1) return 'unsatisfiable';
  if (ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return null;
  return { start: ranges[0].start, end: ranges[0].end };
}
