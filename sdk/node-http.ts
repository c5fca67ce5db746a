import { request as httpRequest, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, ResponseTimeoutError, retryAfterSeconds, UnexpectedAnswerError } from './errors';
import type { RetryOptions } from './retry';

/**
 * The SDK's requests by node:http(s) rather than `fetch`, for the few that a CLI makes before and
 * around an upload (the import's POST, the job's event stream) when the client has no fetch of
 * the caller's own: a process's first `fetch` loads undici (its bundle, its WASM parser, web
 * streams), 50–70 ms on a busy two-core machine against 15–25 ms for a first node:http request.
 * The answers and errors are the same as through openapi-fetch: the body, or an `ApiError`.
 */

export type HttpRequest = {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** How long the answer's headers may take (a server that accepts and never answers); unbounded unless told. */
  responseMs?: number;
};

/** Sends the request; resolves with the answer once its headers are in (its body still to read). */
export async function send(url: string, init: HttpRequest): Promise<IncomingMessage> {
  const target = new URL(url);
  // node:https (TLS, the CA store) only for an https URL.
  const request = target.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  const headers = init.body === undefined ? init.headers : { ...init.headers, 'Content-Length': String(Buffer.byteLength(init.body)) };
  return new Promise((resolve, reject) => {
    const timer =
      init.responseMs === undefined
        ? undefined
        : setTimeout(() => req.destroy(new ResponseTimeoutError(url, init.responseMs!)), init.responseMs);
    const req = request(target, { method: init.method, headers, signal: init.signal }, (response) => {
      clearTimeout(timer);
      resolve(response);
    });
    req.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(init.body);
  });
}

/** The answer's body read whole: its JSON, its text when it is not JSON, or null when empty. */
export async function bodyOf(response: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The error of an answer that is not 2xx, as `ApiError.of` makes it from a fetch Response. */
export function errorOf(response: IncomingMessage, body: unknown): ApiError {
  return ApiError.from(response.statusCode ?? 0, response.statusMessage ?? '', header(response, 'retry-after'), body);
}

export function header(response: IncomingMessage, name: string): string | null {
  const value = response.headers[name.toLowerCase()];
  return typeof value === 'string' ? value : (value?.[0] ?? null);
}

/**
 * A JSON request answered with its JSON body, throwing `ApiError` for an error status: a 429, or a
 * 503 with Retry-After, is sent again after Retry-After as `retrying` does for fetch.
 */
export async function requestJson<T>(url: string, init: HttpRequest, retry: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const response = await send(url, init);
    const body = await bodyOf(response);
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return jsonOf<T>(response, body, url);
    const wait = retryAfterSeconds(header(response, 'retry-after'));
    const retriable = status === 429 || (status === 503 && wait !== undefined);
    if (!retriable || attempt >= retry.maxAttempts || (wait ?? 0) > retry.maxRetryAfterSeconds) throw errorOf(response, body);
    await sleep((wait ?? 1) * 1000, undefined, { signal: init.signal });
  }
}

/** A 2xx's JSON; anything else (an HTML page, nothing) means this is not the service answering. */
function jsonOf<T>(response: IncomingMessage, body: unknown, url: string): T {
  if (typeof body === 'object' && body !== null) return body as T;
  const start = typeof body === 'string' ? body : '';
  throw new UnexpectedAnswerError(response.statusCode ?? 0, header(response, 'content-type') ?? '', start, url);
}
