/**
 * One error taxonomy for the whole service (STYLE §7): the HTTP status, the spec's error code,
 * and whether retrying the same operation could succeed (processors use it to choose between
 * retry and a job result of `error`).
 */

export type ErrorCode =
  | 'invalid_input'
  | 'unauthorized'
  | 'payment_required'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'unprocessable_entity'
  | 'payload_too_large'
  | 'rate_limit_exceeded'
  | 'unavailable'
  | 'internal_error';

const STATUS: Record<ErrorCode, number> = {
  invalid_input: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unprocessable_entity: 422,
  rate_limit_exceeded: 429,
  internal_error: 500,
  unavailable: 503,
};

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: { retriable?: boolean; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.status = STATUS[code];
  }

  get retriable(): boolean {
    return this.options.retriable ?? (this.code === 'unavailable' || this.code === 'internal_error');
  }

  /** The spec's body: `{error, message}` plus extras such as `state` for conflicts. */
  toBody(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...(this.options.extra ?? {}) };
  }
}

export type OutboundErrorReason = 'blocked_address' | 'bad_url' | 'bad_status' | 'too_many_redirects' | 'timeout' | 'network';

/**
 * A refused or failed outbound fetch (a media URL, a webhook); the message names the host and the
 * reason, fit for an API user. Never retriable: a peer's failure stays with its file (DESIGN §7),
 * and the webhook dispatcher schedules its own attempts. The code says whose it is, should one ever
 * reach an HTTP answer: the URL's (`invalid_input`) or the peer's connection (`unavailable`).
 */
export class OutboundError extends AppError {
  constructor(
    readonly reason: OutboundErrorReason,
    message: string,
    /** The status the server answered, for `bad_status`. */
    readonly peerStatus?: number,
  ) {
    super(reason === 'timeout' || reason === 'network' ? 'unavailable' : 'invalid_input', message, { retriable: false });
    this.name = 'OutboundError';
  }
}

export const invalidInput = (message: string) => new AppError('invalid_input', message);
export const notFound = (message: string) => new AppError('not_found', message);
export const forbidden = (message: string) => new AppError('forbidden', message);
export const conflict = (message: string, state: string) => new AppError('conflict', message, { extra: { state } });

/** A domain rule refused a command; carried as a value by deciders, mapped to an AppError at the edge. */
export type Rejection = { readonly rejected: true; readonly error: AppError };
export const reject = (error: AppError): Rejection => ({ rejected: true, error });
export const isRejection = (x: unknown): x is Rejection => typeof x === 'object' && x !== null && (x as Rejection).rejected === true;

export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`);
}

/**
 * The default branch of an `evolve`: exhaustive at compile time, tolerant at run time. An event
 * type this version does not know (written by a newer one during a rolling deploy) leaves the
 * state as it is instead of stopping every reader.
 */
export const ignoreUnknown = <S>(_event: never, state: S): S => state;
