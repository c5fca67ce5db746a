/**
 * An error answer of the API (`{error, message}`, `state` with a conflict), or a request the
 * client gave up on. `retryAfter` (seconds) is the server's `Retry-After` when it sent one.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    readonly state?: string,
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  /** From an error response and its parsed body (openapi-fetch's `error`: JSON, or text). */
  static of(response: Response, body: unknown): ApiError {
    return ApiError.from(response.status, response.statusText, response.headers.get('retry-after'), body);
  }

  /** From an error answer's status, status text, `Retry-After` and parsed body, however it was received. */
  static from(status: number, statusText: string, retryAfterHeader: string | null, body: unknown): ApiError {
    const retryAfter = retryAfterSeconds(retryAfterHeader);
    if (typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string') {
      const b = body as { error: string; message?: unknown; state?: unknown };
      return new ApiError(
        status,
        b.error,
        typeof b.message === 'string' ? b.message : b.error,
        typeof b.state === 'string' ? b.state : undefined,
        retryAfter,
      );
    }
    // Not the API's error shape (a proxy's page): say what came back.
    const text = typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : '';
    return new ApiError(status, 'http_error', `HTTP ${status} ${statusText}${text}`, undefined, retryAfter);
  }
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : undefined;
}

/**
 * A 2xx whose body is not the JSON the API answers (a proxy's or another server's page): the
 * base URL most likely points somewhere else. Says what came back, so the user can tell.
 */
export class UnexpectedAnswerError extends Error {
  override readonly name = 'UnexpectedAnswerError';
  constructor(
    readonly status: number,
    readonly contentType: string,
    readonly start: string,
    readonly url: string,
  ) {
    super(`${url} answered ${status} ${contentType || 'without a content type'}, not JSON: ${JSON.stringify(start.slice(0, 80))}`);
  }
}

/** No answer (the response headers, or the next bytes of a stream) within the client's bound. */
export class ResponseTimeoutError extends Error {
  override readonly name = 'ResponseTimeoutError';
  /** As node's own timeouts: callers that sort network failures by `code` see one. */
  readonly code = 'ETIMEDOUT';
  constructor(what: string, ms: number) {
    super(`no answer from ${what} within ${ms / 1000} s`);
  }
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Why the service could not be reached, or undefined when `err` is not a network failure: a
 * fetch `TypeError` carries the cause (`fetch failed`), node:http throws the cause itself (a plain
 * `Error` with `code`, or "socket hang up"). A client timeout is one too.
 */
export function networkFailure(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return e instanceof ResponseTimeoutError ? e.message : code;
    if (e.message === 'socket hang up') return 'socket hang up';
  }
  if (err instanceof TypeError && err.message === 'fetch failed') {
    const cause = err.cause as { message?: string } | undefined;
    return cause?.message ?? 'fetch failed';
  }
  return undefined;
}
