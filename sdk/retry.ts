import { setTimeout as sleep } from 'node:timers/promises';
import { retryAfterSeconds } from './errors';

export type RetryOptions = { maxAttempts: number; maxRetryAfterSeconds: number };

/**
 * A fetch that sends a request again after the server's `Retry-After` when it is answered 429,
 * or 503 with `Retry-After` (the server saying when it can take it): at most `maxAttempts` in
 * all, and never for a wait longer than `maxRetryAfterSeconds`. Any other answer, 4xx included,
 * is returned as it is. The request is cloned per attempt, so a body can be sent again; a
 * streamed body cannot (cloning tees it, and the unread branch would buffer the whole stream),
 * so such a request is sent once, as it is.
 */
export function retrying(fetch: typeof globalThis.fetch, options: RetryOptions): typeof globalThis.fetch {
  return async (input, init) => {
    if (!isReplayable(init?.body)) return fetch(input, init);
    const request = new Request(input, init);
    for (let attempt = 1; ; attempt += 1) {
      const response = await fetch(request.clone());
      const wait = retryAfterSeconds(response.headers.get('retry-after'));
      const retriable = response.status === 429 || (response.status === 503 && wait !== undefined);
      if (!retriable || attempt >= options.maxAttempts || (wait ?? 0) > options.maxRetryAfterSeconds) return response;
      // Nothing to read of it: free the connection before waiting.
      await response.body?.cancel();
      await sleep((wait ?? 1) * 1000, undefined, { signal: request.signal });
    }
  };
}

/** A body held whole (text, bytes, a form, a blob) can be sent again; a stream or an async iterable cannot. */
export function isReplayable(body: RequestInit['body'] | undefined): boolean {
  return (
    body === undefined ||
    body === null ||
    typeof body === 'string' ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof Blob ||
    body instanceof URLSearchParams ||
    body instanceof FormData
  );
}
