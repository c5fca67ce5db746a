import { OutboundError } from '../../../domain/errors';

/**
 * What a failed exchange tells its caller. Messages name the host and what went wrong in words,
 * fit for an API user or an operator: Node's own messages (internals, local paths) are never passed on.
 */

/** The verb a request's error messages use. */
export type Action = 'fetch from' | 'post to';

/** Cancellation is the caller's own doing: its reason goes back untouched. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('the fetch was aborted', 'AbortError');
}

/** The deadline for an answer's head passed; `ms` is that deadline. */
export const noAnswerWithin = (url: URL, ms: number) =>
  new OutboundError('timeout', `${url.host} timed out: no answer within ${ms / 1000} s`);

const codeOf = (err: unknown) => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};
// A reset arrives as a socket read error; a close before the end as Node's own ECONNRESET without a syscall.
const isReset = (err: unknown) => codeOf(err) === 'ECONNRESET' && (err as { syscall?: unknown }).syscall !== undefined;
// OpenSSL's protocol errors come as EPROTO; certificate checks as their X.509 names.
const TLS_FAILURE = /^EPROTO$|^ERR_(SSL|TLS)_|CERT|SIGNATURE|ISSUER/;

/** A failure before the answer's head arrived: connecting, the TLS handshake, sending, or the head itself. */
export function headerError(err: unknown, url: URL, action: Action, signal?: AbortSignal): Error {
  if (signal?.aborted) return abortReason(signal);
  if (err instanceof OutboundError) return err;
  const code = codeOf(err);
  const host = url.host;
  if (isReset(err)) return new OutboundError('network', `${host} reset the connection before answering`);
  if (code === 'ECONNRESET') return new OutboundError('network', `${host} closed the connection without answering`);
  // Only a request with a body can be cut off while it is still being written.
  if (code === 'EPIPE') return new OutboundError('network', `${host} closed the connection before the request was sent`);
  if (code?.startsWith('HPE_')) return new OutboundError('network', `${host} did not answer with valid HTTP (${code})`);
  if (code === 'ECONNREFUSED') return new OutboundError('network', `could not connect to ${host}: connection refused`);
  if (url.protocol === 'https:' && code && TLS_FAILURE.test(code)) {
    return new OutboundError('network', `the TLS handshake with ${host} failed (${code})`);
  }
  return new OutboundError('network', `could not ${action} ${host}${code ? ` (${code})` : ''}`);
}

/** A failure while a GET's body arrived, saying how far it got. */
export function bodyError(
  err: unknown,
  url: URL,
  progress: { received: number; declared: number | undefined },
  signal?: AbortSignal,
): Error {
  if (signal?.aborted) return abortReason(signal);
  if (err instanceof OutboundError) return err;
  const { received, declared } = progress;
  const host = url.host;
  const after = `after ${received}${declared === undefined ? '' : ` of ${declared}`} bytes`;
  const code = codeOf(err);
  if (isReset(err)) return new OutboundError('network', `${host} reset the connection ${after}`);
  if (code?.startsWith('HPE_')) return new OutboundError('network', `${host} sent a malformed response body (${code}) ${after}`);
  if (code === 'ECONNRESET' || (declared !== undefined && received < declared)) {
    return new OutboundError('network', `${host} closed the connection ${after}`);
  }
  return new OutboundError('network', `the download from ${host} failed ${after}${code ? ` (${code})` : ''}`);
}

/** A failure while a POST's answer arrived: the acknowledgement it carried did not arrive whole. */
export function answerError(err: unknown, url: URL, status: number, received: number, signal: AbortSignal): Error {
  if (signal.aborted) return abortReason(signal);
  if (err instanceof OutboundError) return err;
  const code = codeOf(err);
  const after = `after ${received} bytes`;
  if (code?.startsWith('HPE_')) return new OutboundError('network', `${url.host} sent a malformed answer (${code}) ${after}`);
  return new OutboundError(
    'network',
    `${url.host} ${isReset(err) ? 'reset' : 'closed'} the connection during its answer (HTTP ${status}) ${after}`,
  );
}
