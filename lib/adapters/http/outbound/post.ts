import { OutboundError } from '../../../domain/errors';
import type { PostAnswer, PostOptions } from '../../../ports/outbound';
import { abortReason, answerError, noAnswerWithin } from './errors';
import { fetchHop, parseUrl, type Exchange, type Outgoing, type Settings } from './exchange';

/** A webhook's POST: one exchange under one deadline, its answer read only as far as an acknowledgement needs. */

const POST_TIMEOUT_MS = 15_000;
/** What of a POST's answer is read before the connection is closed: enough for any acknowledgement. */
const POST_ANSWER_CAP = 64 * 1024;
/** setTimeout fires at once past this, so a longer deadline would be no deadline. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One POST under one deadline (see the port's JSDoc). The address guard runs on every call, so an
 * allow list or a DNS answer that changed since the last delivery is honoured.
 */
export async function post(rawUrl: string, options: PostOptions, settings: Settings): Promise<PostAnswer> {
  const { body, headers = {}, timeoutMs = POST_TIMEOUT_MS, signal } = options;
  if (!(timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS)) throw new RangeError(`timeoutMs must be between 1 and ${MAX_TIMER_MS}`);
  const started = performance.now();
  const url = parseUrl(rawUrl);
  const deadline = startDeadline(url, timeoutMs, signal);
  try {
    const outgoing: Outgoing = {
      method: 'POST',
      headers: withoutFraming(headers),
      body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
      action: 'post to',
    };
    const exchange = await fetchHop(url, outgoing, settings, deadline.signal);
    const status = exchange.res.statusCode ?? 0;
    deadline.answered(status);
    await drainAnswer(exchange, status, deadline.signal);
    return { status, durationMs: Math.round(performance.now() - started) };
  } finally {
    deadline.clear();
  }
}

/**
 * The whole exchange's deadline as an abort, so every step (look-up, connect, send, answer) stops
 * on it the same way. A plain timer keeps the controller alive: Node 20 can collect an
 * `AbortSignal.timeout` that nothing else references before it fires.
 */
function startDeadline(url: URL, timeoutMs: number, caller?: AbortSignal) {
  const controller = new AbortController();
  let status: number | undefined;
  const timer = setTimeout(() => {
    const late =
      status === undefined
        ? noAnswerWithin(url, timeoutMs)
        : new OutboundError('timeout', `${url.host} timed out: its answer (HTTP ${status}) did not end within ${timeoutMs / 1000} s`);
    controller.abort(late);
  }, timeoutMs);
  // The caller's abort goes through untouched, as for `get`.
  const forward = () => controller.abort(abortReason(caller!));
  caller?.addEventListener('abort', forward, { once: true });
  if (caller?.aborted) forward();
  return {
    signal: controller.signal,
    answered: (s: number) => (status = s),
    clear() {
      clearTimeout(timer);
      caller?.removeEventListener('abort', forward);
    },
  };
}

/**
 * Reads the answer's body to its end or to POST_ANSWER_CAP, then closes the connection. A body that
 * ends in a reset or an early close rejects: the answer did not arrive whole, so neither did the
 * acknowledgement it carried.
 */
function drainAnswer(exchange: Exchange, status: number, signal: AbortSignal): Promise<void> {
  const { res, url } = exchange;
  return new Promise<void>((resolve, reject) => {
    let received = 0;
    const settle = (err?: Error) => {
      signal.removeEventListener('abort', onAbort);
      exchange.close();
      if (err) reject(err);
      else resolve();
    };
    const onAbort = () => settle(abortReason(signal));
    // Once the answer is complete the connection no longer matters: a reset after it is common.
    exchange.onError((err) => {
      if (!res.complete) settle(answerError(err, url, status, received, signal));
    });
    res.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received >= POST_ANSWER_CAP) settle();
    });
    res.on('end', () => settle());
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
  });
}

/** The fetcher frames the body itself; a caller's framing headers could only contradict it. */
function withoutFraming(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !/^(content-length|transfer-encoding|connection)$/i.test(name)));
}
