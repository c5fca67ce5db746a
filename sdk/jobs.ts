import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from './errors';
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
  let response: Response;
  try {
    response = await source.fetch(`${source.baseUrl}/jobs/${encodeURIComponent(jobId)}/events`, {
      headers: { Authorization: `Bearer ${source.token}`, Accept: 'text/event-stream' },
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    return null;
  }
  const type = response.headers.get('content-type') ?? '';
  if (response.status === 401 || response.status === 403) throw ApiError.of(response, await response.json().catch(() => null));
  if (!response.ok || !type.startsWith('text/event-stream') || !response.body) {
    await response.body?.cancel();
    return null;
  }
  try {
    for await (const data of eventData(response.body)) {
      const job = seen(JSON.parse(data) as Job);
      if (isFinal(job)) return job;
    }
  } catch (err) {
    if (signal?.aborted) throw err;
  }
  return null;
}

/** The `data` of each event of a Server-Sent Events stream (multi-line data joined by newlines). */
export async function* eventData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
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
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
