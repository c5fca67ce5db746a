import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { AppError } from '../../domain/errors';

/**
 * Talking to a third-party API server the deployment configured (an OpenAI-compatible model or
 * transcription server), for the adapters that do: one POST on `node:http` per attempt, with no
 * pooled connection (a retry always gets a fresh one), a connect timeout, one deadline and a cap
 * on the answer; transient answers (429, 408, 5xx) and connection failures tried again with
 * exponential back-off, a server's Retry-After winning within bounds; a refusal (another 4xx)
 * ending at once. Not undici/fetch: undici 7 turns a server closing right after its answer into
 * an uncaught exception (nodejs/undici#5360). Messages name the server by what it is ("the
 * transcription server"), never by its host: they reach API users as a job's or a file's
 * error_message, and the host is the deployment's.
 */

/** What a deployment configures of such a server; each adapter documents its own defaults. */
export interface UpstreamOptions {
  /** Base URL, e.g. `https://api.openai.com/v1`; the adapter appends its endpoint's path. */
  url: string;
  apiKey?: string;
  /** Attempts per request, the first included. */
  attempts?: number;
  /** First back-off; it doubles per attempt (with jitter). */
  retryBaseMs?: number;
  /** Longest wait between attempts, also for a server's Retry-After. */
  maxRetryDelayMs?: number;
  connectTimeoutMs?: number;
  /** Deadline of one request, connect to last byte. */
  requestTimeoutMs?: number;
  maxResponseBytes?: number;
}

type UpstreamDefaults = Required<Omit<UpstreamOptions, 'url' | 'apiKey'>> & Pick<UpstreamSettings, 'server' | 'retryDeadline'>;

/** The endpoint `path` of the configured server, with the retry policy and request settings the options and defaults make. */
export function upstreamOf(options: UpstreamOptions, path: string, defaults: UpstreamDefaults) {
  const given = <K extends keyof UpstreamDefaults>(key: K) => (options as Partial<UpstreamDefaults>)[key] ?? defaults[key];
  const policy: RetryPolicy = { attempts: given('attempts'), retryBaseMs: given('retryBaseMs'), maxRetryDelayMs: given('maxRetryDelayMs') };
  const settings: UpstreamSettings = {
    server: defaults.server,
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    connectTimeoutMs: given('connectTimeoutMs'),
    requestTimeoutMs: given('requestTimeoutMs'),
    retryDeadline: defaults.retryDeadline,
    maxResponseBytes: given('maxResponseBytes'),
  };
  return { url: new URL(`${options.url.replace(/\/+$/, '')}${path}`), policy, settings };
}

export type UpstreamSettings = {
  /** What the server is, in messages: "the agent model server". */
  readonly server: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly connectTimeoutMs: number;
  /** From the request's start to the answer's last byte. */
  readonly requestTimeoutMs: number;
  /** Whether a request past its deadline is tried again (a model may answer faster next time; a slow transcription stays slow). */
  readonly retryDeadline: boolean;
  readonly maxResponseBytes: number;
};

export type UpstreamAnswer = { readonly status: number; readonly retryAfter?: string; readonly body: Buffer };

/** The request body: bytes, or a stream of a known length (some servers refuse chunked uploads). */
export type UpstreamBody = { readonly contentType: string } & (
  { readonly bytes: Buffer } | { readonly stream: Readable; readonly length: number; readonly readFailure: (err: Error) => Error }
);

/**
 * A failure worth another attempt. It never leaves the retry loop, which tells it by its class
 * rather than by `retriable` (a retriable error may well be one for the job's next attempt, not
 * for this loop). `malformed`: the server answered, but not usably.
 */
export class TryAgain extends AppError {
  constructor(
    message: string,
    readonly malformed = false,
  ) {
    super('unavailable', message, { retriable: true });
  }
}

export const isTransientStatus = (status: number) => status >= 500 || status === 429 || status === 408;

/** Retry-After is seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}

/** OpenAI's error body is `{error: {message}}`; other servers send `{detail}`, `{message}` or text. */
export function serverMessage(body: Buffer): string {
  const text = body.toString('utf8').trim();
  try {
    const json = JSON.parse(text) as { error?: { message?: unknown } | string; detail?: unknown; message?: unknown };
    const candidate = typeof json.error === 'object' ? json.error?.message : (json.error ?? json.detail ?? json.message);
    if (typeof candidate === 'string') return candidate.slice(0, 300);
  } catch {
    // not JSON: the text itself, if short
  }
  return text.slice(0, 300);
}

export type RetryPolicy = {
  readonly attempts: number;
  /** First back-off; it doubles per attempt (with jitter). */
  readonly retryBaseMs: number;
  /** Longest wait between attempts, also for a server's Retry-After. */
  readonly maxRetryDelayMs: number;
};

/**
 * `send` until the server answers 2xx, then what `accept` makes of the answer (which may throw a
 * `TryAgain` for an unusable one). `refused` is the error for a status not worth another attempt;
 * `exhausted` the one after the last attempt.
 */
export async function withRetries<T>(
  policy: RetryPolicy,
  signal: AbortSignal,
  send: () => Promise<UpstreamAnswer>,
  handle: {
    accept: (answer: UpstreamAnswer) => T;
    refused: (status: number, failure: string) => Error;
    exhausted: (attempts: number, failure: string, malformed: boolean) => Error;
  },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let failure: string;
    let malformed = false;
    let retryAfterMs: number | undefined;
    try {
      const answer = await send();
      if (answer.status >= 200 && answer.status <= 299) return handle.accept(answer);
      const message = serverMessage(answer.body);
      failure = `HTTP ${answer.status}${message ? `: ${message}` : ''}`;
      if (!isTransientStatus(answer.status)) throw handle.refused(answer.status, failure);
      retryAfterMs = parseRetryAfter(answer.retryAfter);
    } catch (err) {
      if (!(err instanceof TryAgain)) throw err;
      failure = err.message;
      malformed = err.malformed;
    }
    if (attempt >= policy.attempts) throw handle.exhausted(attempt, failure, malformed);
    const backoff = policy.retryBaseMs * 2 ** (attempt - 1) * (0.75 + Math.random() / 2);
    await sleep(Math.min(retryAfterMs ?? backoff, policy.maxRetryDelayMs), signal);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
  });
}

const abortReason = (signal: AbortSignal) =>
  signal.reason instanceof Error ? signal.reason : new DOMException('the request was aborted', 'AbortError');

/** One POST on its own connection; a connection failure, a timeout (when retried) or a cut answer is a `TryAgain`. */
export function postOnce(url: URL, body: UpstreamBody, settings: UpstreamSettings, signal: AbortSignal): Promise<UpstreamAnswer> {
  signal.throwIfAborted();
  const { server } = settings;
  const length = 'bytes' in body ? body.bytes.length : body.length;
  const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method: 'POST',
    agent: false,
    headers: {
      ...settings.headers,
      accept: 'application/json',
      'content-type': body.contentType,
      'content-length': String(length),
      connection: 'close',
    },
  });
  return new Promise<UpstreamAnswer>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, answer?: UpstreamAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      clearTimeout(deadline);
      signal.removeEventListener('abort', onAbort);
      if (err) {
        req.destroy();
        if ('stream' in body) body.stream.destroy();
        reject(err);
      } else resolve(answer!);
    };
    const onAbort = () => finish(abortReason(signal));
    const connectTimer = setTimeout(
      () => finish(new TryAgain(`could not connect to ${server} within ${settings.connectTimeoutMs / 1000} s`)),
      settings.connectTimeoutMs,
    );
    const late = `${server} did not answer within ${settings.requestTimeoutMs / 1000} s`;
    const deadline = setTimeout(
      () => finish(settings.retryDeadline ? new TryAgain(late) : new AppError('unavailable', late, { retriable: false })),
      settings.requestTimeoutMs,
    );
    req.on('socket', (socket) => socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer)));
    // Permanent: an 'error' with no listener would be an uncaught exception.
    req.on('error', (err) => finish(networkFailure(server, err)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received <= settings.maxResponseBytes) chunks.push(chunk);
        else
          finish(new AppError('unavailable', `${server} answered with more than ${settings.maxResponseBytes} bytes`, { retriable: false }));
      });
      res.on('error', () => undefined); // its 'close' without `complete` says it
      res.on('end', () => {
        const retryAfter = res.headers['retry-after'];
        finish(null, {
          status: res.statusCode ?? 0,
          retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          body: Buffer.concat(chunks),
        });
      });
      res.on('close', () => {
        if (!res.complete) finish(new TryAgain(`${server} closed the connection before the end of its answer`));
      });
    });
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    else if ('bytes' in body) req.end(body.bytes);
    else {
      body.stream.on('error', (err) => finish(body.readFailure(err)));
      body.stream.pipe(req);
    }
  });
}

const TLS_FAILURE = /^EPROTO$|^ERR_(SSL|TLS)_|CERT|SIGNATURE|ISSUER/;

/** Connection failures are transient, except TLS ones: a bad certificate stays bad. */
function networkFailure(server: string, err: Error): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code && TLS_FAILURE.test(code))
    return new AppError('unavailable', `the TLS handshake with ${server} failed (${code})`, { retriable: false });
  if (code === 'ECONNREFUSED') return new TryAgain(`could not connect to ${server}: connection refused`);
  if (code === 'ECONNRESET') return new TryAgain(`${server} closed or reset the connection without answering`);
  return new TryAgain(`the request to ${server} failed${code ? ` (${code})` : ''}`);
}
