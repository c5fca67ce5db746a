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
    const retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
    if (typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string') {
      const b = body as { error: string; message?: unknown; state?: unknown };
      return new ApiError(
        response.status,
        b.error,
        typeof b.message === 'string' ? b.message : b.error,
        typeof b.state === 'string' ? b.state : undefined,
        retryAfter,
      );
    }
    // Not the API's error shape (a proxy's page): say what came back.
    const text = typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : '';
    return new ApiError(response.status, 'http_error', `HTTP ${response.status} ${response.statusText}${text}`, undefined, retryAfter);
  }
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : undefined;
}
