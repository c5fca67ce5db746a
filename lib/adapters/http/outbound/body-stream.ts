import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { OutboundError } from '../../../domain/errors';
import type { FetchedBody } from '../../../ports/outbound';
import { abortReason, bodyError } from './errors';
import type { Exchange } from './exchange';

/**
 * A GET's answer handed to the caller: a 2xx with its body as a stream that a hostile server can
 * neither stall forever nor cut short unnoticed, and that never outlives its connection.
 */

/** The final hop's answer: a 2xx becomes the caller's body, any other status is `bad_status`. */
export function acceptedBody(exchange: Exchange, idleMs: number, signal?: AbortSignal): FetchedBody {
  const { res, url } = exchange;
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    exchange.close();
    throw new OutboundError('bad_status', `${url.host} answered HTTP ${status}`, status);
  }
  const length = Number(res.headers['content-length']);
  const declared = res.headers['content-length'] !== undefined && Number.isSafeInteger(length) && length >= 0 ? length : undefined;
  return {
    status,
    contentType: res.headers['content-type'],
    contentLength: declared,
    finalUrl: url.toString(),
    body: streamBody(exchange, declared, idleMs, signal),
  };
}

/**
 * The body as a stream that ends only once every declared byte arrived. Any other end (reset,
 * early close, malformed bytes, a stall of `idleMs`, the caller's abort) errors it instead, and
 * its close closes the connection.
 */
function streamBody(exchange: Exchange, declared: number | undefined, idleMs: number, signal?: AbortSignal): Readable {
  const { res, url } = exchange;
  const out = new PassThrough();
  let received = 0;
  const idle = stallTimer(res, idleMs, () =>
    out.destroy(new OutboundError('timeout', `${url.host} timed out: nothing received for ${idleMs / 1000} s`)),
  );
  const stop = (err: Error) => {
    idle.clear();
    out.destroy(err);
  };
  const onAbort = () => stop(abortReason(signal!));

  // Once every byte has arrived the connection no longer matters: a reset after the body is common.
  exchange.onError((err) => {
    if (!res.complete) stop(bodyError(err, url, { received, declared }, signal));
  });
  relay(res, out, idle, (bytes) => (received += bytes));
  res.on('end', () => {
    const overrun = lengthOverrun(exchange, declared);
    if (overrun) return stop(overrun);
    idle.clear();
    out.end();
  });
  out.on('close', () => {
    idle.clear();
    signal?.removeEventListener('abort', onAbort);
    exchange.close();
  });
  idle.arm();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
  return out;
}

type StallTimer = { arm(): void; clear(): void };

/**
 * Fires `onStall` when the server sends nothing for `ms`. Only armed while waiting on the server:
 * a reader that holds back is not a stalled server. A plain timer, not `AbortSignal.timeout`:
 * Node 20 can collect a timeout signal that nothing else references before it fires.
 */
function stallTimer(res: IncomingMessage, ms: number, onStall: () => void): StallTimer {
  let timer: NodeJS.Timeout | undefined;
  const clear = () => clearTimeout(timer);
  return {
    clear,
    arm() {
      clear();
      if (!res.complete) timer = setTimeout(onStall, ms);
    },
  };
}

/** Copies the body into `out`; while the reader holds back the server is paused and the stall timer is off. */
function relay(res: IncomingMessage, out: PassThrough, idle: StallTimer, count: (bytes: number) => void): void {
  res.on('data', (chunk: Buffer) => {
    count(chunk.length);
    if (out.write(chunk)) return idle.arm();
    idle.clear();
    res.pause();
  });
  out.on('drain', () => {
    idle.arm();
    res.resume();
  });
}

/** More bytes than a Content-Length declared mean that length was wrong, and the file may be cut short. */
function lengthOverrun(exchange: Exchange, declared: number | undefined): OutboundError | undefined {
  const framedByLength = declared !== undefined && exchange.res.headers['transfer-encoding'] === undefined;
  if (!framedByLength || (exchange.rawBodyBytes() ?? 0) <= declared) return undefined;
  return new OutboundError('network', `${exchange.url.host} sent more bytes than the ${declared} its Content-Length declared`);
}
