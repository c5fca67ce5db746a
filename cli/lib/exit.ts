import { ApiError, networkFailure, UnexpectedAnswerError } from '../../sdk/errors';

/**
 * The exit codes scripts can rely on (README "Clients: the CLI"): they say whose problem it was,
 * so a script can tell "fix the command" from "retry later" from "the job itself failed".
 */
export const Exit = {
  ok: 0,
  /** The command line is wrong, or there is no session (commander uses 1 for its own errors too). */
  usage: 1,
  /** The API refused the request (4xx). */
  refused: 2,
  /** The job ended in error or was cancelled (when waited for). */
  jobFailed: 3,
  /** The service cannot be reached, or answered 5xx. */
  unavailable: 4,
  /** Ctrl-C. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof Exit)[keyof typeof Exit];

/** An error the CLI reports as it is, with the exit code it means. */
export class CliError extends Error {
  constructor(
    readonly code: ExitCode,
    message: string,
  ) {
    super(message);
  }
}

/** The message and exit code of anything a command throws: each says what to do next. */
export function describeFailure(err: unknown, baseUrl?: string): { code: ExitCode; message: string } {
  if (err instanceof CliError) return { code: err.code, message: err.message };
  if (isAbort(err)) return { code: Exit.interrupted, message: 'interrupted' };
  if (err instanceof ApiError) return describeApiError(err);
  const where = baseUrl ? ` at ${baseUrl}` : '';
  if (err instanceof UnexpectedAnswerError) {
    return {
      code: Exit.unavailable,
      message: `this does not look like the service${where}: ${err.message}; check the base URL with mps login`,
    };
  }
  const network = networkFailure(err);
  if (network !== undefined) {
    return {
      code: Exit.unavailable,
      message: `cannot reach the service${where} (${network}): is it running? Check the base URL with mps login`,
    };
  }
  return { code: Exit.usage, message: err instanceof Error ? err.message : String(err) };
}

function describeApiError(err: ApiError): { code: ExitCode; message: string } {
  if (err.status >= 500)
    return { code: Exit.unavailable, message: `the service failed (${err.status} ${err.error}): ${err.message}; try again later` };
  if (err.status === 401) return { code: Exit.refused, message: `the token was refused: ${err.message}; run mps login` };
  if (err.status === 403) return { code: Exit.refused, message: `not allowed: ${err.message}` };
  if (err.status === 404) return { code: Exit.refused, message: `not found: ${err.message}` };
  if (err.status === 402) {
    return {
      code: Exit.refused,
      message: `the drive's balance is too low: ${err.message}; its operator raises it (admin drive update --drive <drive-id> --media-seconds N or --credits N)`,
    };
  }
  if (err.status === 429) {
    const after = err.retryAfter !== undefined ? ` (retry after ${err.retryAfter} s)` : '';
    return { code: Exit.refused, message: `too many requests${after}: ${err.message}` };
  }
  const state = err.state ? `, state ${err.state}` : '';
  return { code: Exit.refused, message: `the request was refused (${err.status} ${err.error}${state}): ${err.message}` };
}

export const isAbort = (err: unknown) =>
  err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR');
