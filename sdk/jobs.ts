import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from './errors';
import { bodyOf, errorOf, header, send } from './node-http';
import type { components } from './schema';

export type Job = components['schemas']['job'];

export type WaitOptions = {
  signal?: AbortSignal;
  /** Each new state or progress of the job, the final one included. */
  onUpdate?: (job: Job) => void;
  /** Between polls, when the server has no event stream (1 s unless told). */
  intervalMs?: number;
};

type JobSource = {
  baseUrl: string;
  token: string;
  fetch: typeof globalThis.fetch;
  /** The event stream by node:http rather than `fetch` (the client has no fetch of the caller's own). */
  http?: boolean;
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
  for (;;) {
    const job = seen(await source.getJob(jobId, options.signal));
    if (isFinal(job)) return job;
    await sleep(options.intervalMs ?? 1000, undefined, { signal: options.signal });
  }
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
  let stream: EventStream;
  try {
    stream = await (source.http ? eventsByHttp(url, headers, signal) : eventsByFetch(source.fetch, url, headers, signal));
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
    for await (const data of eventData(stream.body)) {
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
  const response = await fetch(url, { headers, signal });
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    body: response.body ?? (async function* () {})(),
    refusal: async () => ApiError.of(response, await response.json().catch(() => null)),
    close: () => void response.body?.cancel().catch(() => undefined),
  };
}

async function eventsByHttp(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<EventStream> {
  const response = await send(url, { method: 'GET', headers, signal });
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
