import { ResponseTimeoutError } from './errors';
import { isReplayable } from './retry';

/**
 * Bounds on a silent server (one that accepts the connection and never answers): without them a
 * request waits forever. `responseMs` bounds the wait for an answer's headers, `streamIdleMs` the
 * silence of an event stream between two reads (the service sends a keep-alive every 15 s).
 */
export type TimeoutOptions = { responseMs: number; streamIdleMs: number };

export const DEFAULT_TIMEOUTS: TimeoutOptions = { responseMs: 30_000, streamIdleMs: 45_000 };

/**
 * A fetch whose answer must start within `ms`: the body is read without a bound once the headers
 * are in (an export may be long). A streamed request body is passed through: its headers come only
 * after the whole body was sent, so the upload bounds it by its own progress instead.
 */
export function boundedFetch(fetch: typeof globalThis.fetch, ms: number): typeof globalThis.fetch {
  return async (input, init) => {
    if (!isReplayable(init?.body)) return fetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    const bound = new AbortController();
    const timer = setTimeout(() => bound.abort(new ResponseTimeoutError(url, ms)), ms);
    const own = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    try {
      return await fetch(input, { ...init, signal: own ? AbortSignal.any([own, bound.signal]) : bound.signal });
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * The chunks of `body`, failing with a `ResponseTimeoutError` (after calling `close`) when none
 * comes for `ms`: a stream whose server went away without closing it looks alive forever.
 */
export async function* idleBounded<T>(body: AsyncIterable<T>, ms: number, what: string, close: () => void): AsyncGenerator<T> {
  const iterator = body[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      const next = await nextWithin(iterator, ms, what).catch((err: unknown) => {
        // Closed, the stream ends its pending read; nothing more to wait for from it.
        finished = true;
        close();
        void iterator.return?.().catch(() => undefined);
        throw err;
      });
      if (next.done) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    // Left early (the job ended, or a failure): close the stream as a for-await over it would.
    if (!finished) await iterator.return?.().catch(() => undefined);
  }
}

async function nextWithin<T>(iterator: AsyncIterator<T>, ms: number, what: string): Promise<IteratorResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ResponseTimeoutError(what, ms)), ms);
  });
  try {
    return await Promise.race([iterator.next(), silent]);
  } finally {
    clearTimeout(timer);
  }
}
