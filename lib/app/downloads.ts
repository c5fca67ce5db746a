import { signUrl, verifySignedUrl } from './signed-urls';

/**
 * Download URLs (issue 21's renders, any blob later): the URL is the credential. It names the blob
 * and says how to hand it out (file name and type), all signed with SIGNING_SECRET until it
 * expires (DOWNLOAD_URL_TTL), so whoever signs (the publish processor) and whoever serves (the
 * query API) share nothing but the secret. Served by services/query-api/downloads.ts.
 */

export const DOWNLOADS_PATH = '/downloads';

/** What a download URL hands out. */
export type DownloadTarget = {
  /** The blob store key. */
  readonly blob: string;
  /** The name the browser saves it under (any Unicode; sent as RFC 6266 `filename*`). */
  readonly filename: string;
  readonly contentType: string;
};

/** `{baseUrl}/downloads/<blob, base64url>?filename=…&type=…&expires=…&signature=…`. */
export function signDownloadUrl(baseUrl: string, secret: string, target: DownloadTarget, expiresAt: Date): string {
  const path = `${DOWNLOADS_PATH}/${Buffer.from(target.blob).toString('base64url')}`;
  return signUrl(baseUrl, path, { filename: target.filename, type: target.contentType }, { secret, expiresAt });
}

export type DownloadVerdict =
  | { readonly ok: true; readonly target: DownloadTarget }
  | { readonly ok: false; readonly reason: 'tampered' | 'malformed' }
  | { readonly ok: false; readonly reason: 'expired'; readonly expiresAt: Date };

const BLOB_ID = /^[A-Za-z0-9_-]{1,2048}$/;

/** Checks a request for `{DOWNLOADS_PATH}/<id>` and its raw query string. */
export function verifyDownload(id: string, query: string, options: { secret: string; now: Date }): DownloadVerdict {
  if (!BLOB_ID.test(id)) return { ok: false, reason: 'malformed' };
  const verdict = verifySignedUrl(`${DOWNLOADS_PATH}/${id}`, query, options);
  if (!verdict.ok) return verdict;
  const { filename, type } = verdict.params;
  if (filename === undefined || type === undefined) return { ok: false, reason: 'malformed' };
  return { ok: true, target: { blob: Buffer.from(id, 'base64url').toString(), filename, contentType: type } };
}
