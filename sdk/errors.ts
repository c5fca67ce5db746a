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
