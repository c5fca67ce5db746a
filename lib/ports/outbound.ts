import type { Readable } from 'node:stream';

/** Outbound HTTP for media URLs (and later callbacks), guarded against internal addresses. */

export interface FetchedBody {
  readonly status: number;
  readonly contentType: string | undefined;
  /** Declared length, when the server sent one. */
  readonly contentLength: number | undefined;
  readonly finalUrl: string;
  readonly body: Readable;
}

export interface OutboundFetcher {
  /**
   * GETs `url`, following at most a few redirects, refusing any hop whose host resolves to a
   * loopback, private, link-local or metadata address unless allow-listed. Rejects with an
   * `OutboundError` whose message is fit to show the API user.
   */
  get(url: string, options: { signal?: AbortSignal; headers?: Record<string, string> }): Promise<FetchedBody>;
}
