import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, networkFailure } from './errors';
import { bodyOf, errorOf, header, send } from './node-http';
import type { components } from './schema';
import { DEFAULT_TIMEOUTS, idleBounded, type TimeoutOptions } from './timeout';

export type Job = components['schemas']['job'];

export type WaitOptions = {
  signal?: AbortSignal;
  /** Each new state or progress of the job, the final one included. */
  onUpdate?: (job: Job) => void;
  /** Between polls, when the server has no event stream (1 s unless told). */
  intervalMs?: number;
  /**
   * How long polls may keep failing in a row (the service unreachable or answering 5xx: a restart)
   * before the wait fails with the last failure (60 s unless told); the job goes on meanwhile.
   */
  maxOutageMs?: number;
};

type JobSource = {
  baseUrl: string;
  token: string;
  fetch: typeof globalThis.fetch;
  /** The event stream by node:http rather than `fetch` (the client has no fetch of the caller's own). */
  http?: boolean;
  timeouts?: TimeoutOptions;
  getJob: (jobId: string, signal?: AbortSignal) => Promise<Job>;
};

export const isFinal = (job: Job) => job.job_state === 'stopped' || job.job_state === 'cancelled';

/**
 * Resolves with the job once it is stopped or cancelled. Follows `GET /jobs/{id}/events` (Server-
 * Sent Events) when the server answers it with an event stream; polls `GET /jobs/{id}` when it
 * does not (404, another type), when the connection fails, or when the stream ends early.
 */
export async function waitForJob(source: JobSource, jobId: string, options: WaitOptions = {}): Promise<Job> {
  let last = '';
  const seen = (job: Job) => {
    const text = JSON.stringify(job);
    if (text !== last) options.onUpdate?.(job);
    last = text;
    return job;
  };
  const streamed = await followEvents(source, jobId, options.signal, seen);
  if (streamed) return streamed;
  const poll = outlasting(() => source.getJob(jobId, options.signal), options);
  for (;;) {
    const job = seen(await poll());
    if (isFinal(job)) return job;
    await sleep(options.intervalMs ?? 1000, undefined, { signal: options.signal });
  }
}

/**
 * `get` retried through an outage (a network failure or a 5xx) with backoff, 0.5 s doubling to
 * 5 s, until failures have lasted `maxOutageMs`: a service that restarts loses none of its jobs,
 * so a wait need not die with it. Anything else (a 404, a refused token) is thrown at once.
 */
function outlasting<T>(get: () => Promise<T>, options: WaitOptions): () => Promise<T> {
  const limit = options.maxOutageMs ?? 60_000;
  return async () => {
    const since = Date.now();
    for (let failures = 0; ; failures += 1) {
      try {
        return await get();
      } catch (err) {
        const outage = networkFailure(err) !== undefined || (err instanceof ApiError && err.status >= 500);
        if (options.signal?.aborted || !outage || Date.now() - since >= limit) throw err;
        const backoff = Math.min(500 * 2 ** failures, 5000, Math.max(0, limit - (Date.now() - since)));
        await sleep(backoff, undefined, { signal: options.signal });
      }
    }
  };
}

/** The final job read from the event stream, or null to poll instead. Errors of the API itself (401, 403) are thrown. */
async function followEvents(
  source: JobSource,
  jobId: string,
  signal: AbortSignal | undefined,
  seen: (job: Job) => Job,
): Promise<Job | null> {
  const url = `${source.baseUrl}/jobs/${encodeURIComponent(jobId)}/events`;
  const headers = { Authorization: `Bearer ${source.token}`, Accept: 'text/event-stream' };
  const timeouts = source.timeouts ?? DEFAULT_TIMEOUTS;
  let stream: EventStream;
  try {
    stream = await (source.http
      ? eventsByHttp(url, headers, timeouts.responseMs, signal)
      : eventsByFetch(source.fetch, url, headers, signal));
  } catch (err) {
    if (signal?.aborted) throw err;
    return null;
  }
  if (stream.status === 401 || stream.status === 403) throw await stream.refusal();
  if (stream.status < 200 || stream.status > 299 || !stream.type.startsWith('text/event-stream')) {
    stream.close();
    return null;
  }
  try {
    // A stream silent past its keep-alives is dead (a server gone without closing it): poll instead.
    for await (const data of eventData(idleBounded(stream.body, timeouts.streamIdleMs, url, stream.close))) {
      const job = seen(JSON.parse(data) as Job);
      if (isFinal(job)) return job;
    }
  } catch (err) {
    if (signal?.aborted) throw err;
  }
  return null;
}

/** An answer to `GET /jobs/{id}/events`, however it was requested. */
type EventStream = { status: number; type: string; body: AsyncIterable<Uint8Array>; refusal(): Promise<ApiError>; close(): void };

async function eventsByFetch(
  fetch: typeof globalThis.fetch,
  url: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<EventStream> {
  // Closing aborts the request: cancelling a body that a reader holds (locked) would do nothing.
  const closing = new AbortController();
  const response = await fetch(url, { headers, signal: signal ? AbortSignal.any([signal, closing.signal]) : closing.signal });
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    body: response.body ?? (async function* () {})(),
    refusal: async () => ApiError.of(response, await response.json().catch(() => null)),
    close: () => closing.abort(),
  };
}

async function eventsByHttp(url: string, headers: Record<string, string>, responseMs: number, signal?: AbortSignal): Promise<EventStream> {
  const response = await send(url, { method: 'GET', headers, signal, responseMs });
  return {
    status: response.statusCode ?? 0,
    type: header(response, 'content-type') ?? '',
    body: response,
    refusal: async () => errorOf(response, await bodyOf(response)),
    close: () => response.destroy(),
  };
}

/**
 * The `data` of each event of a Server-Sent Events stream (multi-line data joined by newlines):
 * a web stream's body or a node:http answer. Leaving early closes the stream.
 */
export async function* eventData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  for await (const value of body) {
    buffer += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r?\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer[newline] === '\r' ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''));
      }
    }
  }
}
