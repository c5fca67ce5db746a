import type { Readable } from 'node:stream';

/** Outbound HTTP for media URLs and webhook deliveries, guarded against internal addresses. */

export interface FetchedBody {
  readonly status: number;
  readonly contentType: string | undefined;
  /** Declared length, when the server sent one. */
  readonly contentLength: number | undefined;
  readonly finalUrl: string;
  readonly body: Readable;
}

export interface GetOptions {
  readonly signal?: AbortSignal;
  /** Sent on every hop, except credentials (`authorization`, `cookie`, `proxy-authorization`) to another origin. */
  readonly headers?: Record<string, string>;
}

export interface PostOptions {
  readonly body: string | Buffer;
  /** Sent as given (e.g. `content-type`, the webhook headers); `content-length` and `connection` are the fetcher's. */
  readonly headers?: Record<string, string>;
  /** The one deadline for the whole exchange, from DNS to the end of the answer. Default 15 000. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface PostAnswer {
  /** The receiver's status as sent: a 3xx is an answer like any other, never followed. */
  readonly status: number;
  /** From the start of the call (DNS included) to the end of the answer. */
  readonly durationMs: number;
}

export interface OutboundFetcher {
  /**
   * GETs `url`, following at most a few redirects, refusing any hop whose host resolves to a
   * loopback, private, link-local or metadata address unless allow-listed. Rejects, and errors
   * the body, with an `OutboundError` (a non-retriable `AppError` of `lib/domain/errors`, its
   * `reason` saying what failed) whose message is fit to show the API user; an abort of `signal`
   * with its reason.
   */
  get(url: string, options: GetOptions): Promise<FetchedBody>;

  /**
   * POSTs `body` to `url` once, for deliveries such as webhooks.
   *
   * - The address guard of `get`, run afresh on every call: every resolved address is checked and
   *   the connection goes only to those addresses, so a DNS answer that changes later is not used.
   * - Redirects are not followed: a 3xx resolves like any other status.
   * - One deadline (`timeoutMs`) holds for connecting, sending, the answer's head and its body.
   *   The body is read and discarded up to 64 KiB; past that the connection is closed and the
   *   status stands, since a receiver that answered has answered.
   * - Any status resolves: what counts as success is the caller's decision. Everything else
   *   (refused address, no answer in time, a close or reset before the answer ended) rejects with
   *   an `OutboundError` (`blocked_address`, `bad_url`, `timeout`, `network`) whose message names
   *   the host and is fit for an operator; an abort of `signal` rejects with its reason.
   * - No connection outlives the call: none is pooled or kept alive.
   */
  post(url: string, options: PostOptions): Promise<PostAnswer>;
}
