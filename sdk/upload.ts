import { createReadStream } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, ResponseTimeoutError, UnexpectedAnswerError } from './errors';
import { bodyOf, errorOf, header } from './node-http';

export type UploadOptions = {
  /**
   * Bytes per PUT, each part read into memory. Unless told, the rest of the file goes in one
   * streamed PUT: the server keeps what a cut-off body delivered, so it resumes just the same.
   */
  partSize?: number;
  /** Bytes sent so far: what the server holds after each part, or the bytes streamed (the first call says where a resumed upload starts). */
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
  /**
   * How the streamed rest goes: `http` pipes the file with node:http(s) (the default: as fast as
   * curl), `fetch` through the client's fetch (a fetch of the caller's own: a proxy's, a test's).
   */
  transport?: 'http' | 'fetch';
  /** A part that fails (connection lost, 5xx) is resumed from what the server holds, this many times in a row (3 unless told). */
  retries?: number;
  /**
   * The URL was just issued, so the server holds none of the file: the first PUT sends from byte 0
   * without asking first (one round trip less). Safe even when wrong: the server skips the bytes
   * it already holds, and a failed PUT asks as usual.
   */
  fresh?: boolean;
  /**
   * How long the upload may go without progress (no byte taken by the socket, or no answer after
   * the last) before the PUT fails and is retried as a lost connection. Unbounded unless told;
   * the client gives its `timeoutMs`.
   */
  idleMs?: number;
};

export type UploadResult = { asset_id: string; size: number };

/**
 * Uploads a file to a signed upload URL in parts (`Content-Range`), as resumable uploads work
 * (README "Import semantics"): it first asks the server what it holds (`bytes *\/total`: 308
 * with `Range`, or 200 when complete), so a second call after an interruption sends only the rest.
 */
export async function uploadFile(
  fetch: typeof globalThis.fetch,
  path: string,
  url: string,
  options: UploadOptions = {},
): Promise<UploadResult> {
  const partSize = checkedPartSize(options.partSize);
  const total = (await stat(path)).size;
  const file = await open(path, 'r');
  try {
    let failures = 0;
    let held = options.fresh ? 0 : await ask(fetch, url, total, options.signal);
    while (typeof held === 'number') {
      options.onProgress?.(held, total);
      try {
        if (partSize === undefined) {
          held =
            options.transport === 'fetch'
              ? await streamThroughFetch(fetch, path, url, held, total, options)
              : await sendRest(file, url, held, total, options);
        } else {
          const length = Math.min(partSize, total - held);
          const part = Buffer.alloc(length);
          await file.read(part, 0, length, held);
          held = await send(fetch, url, part, held, total, options.signal);
        }
        failures = 0;
      } catch (err) {
        // A conflict: the server holds other bytes than the PUT assumed (`fresh` was wrong); ask at once.
        const conflict = err instanceof ApiError && err.status === 409;
        // Another server's page will not change with asking again.
        const foreign = err instanceof UnexpectedAnswerError;
        const retriable = !foreign && (!(err instanceof ApiError) || err.status >= 500 || err.status === 429 || conflict);
        if (options.signal?.aborted || !retriable || ++failures > (options.retries ?? 3)) throw err;
        if (!conflict) await sleep(Math.min(200 * 2 ** failures, 5000), undefined, { signal: options.signal });
        held = await ask(fetch, url, total, options.signal);
      }
    }
    options.onProgress?.(total, total);
    return held;
  } finally {
    await file.close();
  }
}

/** A part size is a whole number of bytes, 1 or more: anything else would send a malformed Content-Range. */
function checkedPartSize(partSize: number | undefined): number | undefined {
  if (partSize === undefined || (Number.isSafeInteger(partSize) && partSize >= 1)) return partSize;
  throw new RangeError(`partSize must be a whole number of bytes, 1 or more (got ${partSize})`);
}

/** What the server holds: the number of bytes, or the upload's answer once complete. */
async function ask(fetch: typeof globalThis.fetch, url: string, total: number, signal?: AbortSignal): Promise<number | UploadResult> {
  const response = await fetch(url, { method: 'PUT', headers: { 'Content-Range': `bytes */${total}` }, signal });
  return heldBy(response);
}

async function send(
  fetch: typeof globalThis.fetch,
  url: string,
  part: Buffer,
  first: number,
  total: number,
  signal?: AbortSignal,
): Promise<number | UploadResult> {
  const response = await fetch(url, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': `bytes ${first}-${first + part.length - 1}/${total}` },
    body: part,
    signal,
  });
  return heldBy(response);
}

/**
 * The file from `first` to its end in one PUT by node:http(s) (a web stream through fetch cost a
 * third more time than curl on a 200 MB file), progress reported as it goes. An early answer (a
 * refusal before the body is done) is read as the answer; the rest of the body is not sent.
 */
async function sendRest(
  file: FileHandle,
  url: string,
  first: number,
  total: number,
  options: UploadOptions,
): Promise<number | UploadResult> {
  const target = new URL(url);
  // node:https (TLS, the CA store) is loaded only for an https URL: it costs a CLI ~15 ms to start.
  const send = target.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  const request = send(target, {
    method: 'PUT',
    headers: {
      'Content-Type': 'application/octet-stream',
      'Content-Range': `bytes ${first}-${total - 1}/${total}`,
      'Content-Length': String(total - first),
    },
    signal: options.signal,
  });
  // The socket's own idle timer: reset by each byte written or read, so a long upload is never cut.
  if (options.idleMs !== undefined) {
    const ms = options.idleMs;
    request.setTimeout(ms, () => request.destroy(new ResponseTimeoutError(url, ms)));
  }
  try {
    const answered = new Promise<IncomingMessage>((resolve, reject) => request.once('response', resolve).once('error', reject));
    const sending = writeFileRange(file, request, first, total, (sent) => options.onProgress?.(sent, total));
    // Once answered, a failure of the rest of the body (the socket closed under it) is no news.
    sending.catch(() => undefined);
    const response = await Promise.race([answered, sending.then(() => answered)]);
    // Read as node:http gives it: a web Response here would load undici for nothing.
    const body = await bodyOf(response);
    const answer = { status: response.statusCode ?? 0, range: header(response, 'range'), type: header(response, 'content-type'), body };
    return held(answer, url, () => errorOf(response, body));
  } finally {
    request.destroy();
  }
}

/** Bytes per read, and reads in flight: 4 MiB ahead of the socket at most. */
const READ_SIZE = 1024 * 1024;
const READ_BUFFERS = 4;

/**
 * Writes bytes `from`…`to - 1` of the file into the request, then ends it. The reads go into a
 * few buffers used again and again (a buffer is read into only once the socket has taken what it
 * held: its write's callback), as curl does: a fresh buffer per read cost about twice curl's CPU
 * time on a 200 MB file, page faults of new memory that the server's share of two cores then lacks.
 */
async function writeFileRange(
  file: FileHandle,
  request: ClientRequest,
  from: number,
  to: number,
  onSent: (sent: number) => void,
): Promise<void> {
  const free = Array.from({ length: READ_BUFFERS }, () => Buffer.allocUnsafeSlow(READ_SIZE));
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const stop = (err: Error) => {
    failure ??= err;
    wake?.();
  };
  request.once('error', stop).once('close', () => stop(new Error('the upload connection closed before the body was sent')));
  let at = from;
  while (at < to) {
    while (free.length === 0 && !failure) await new Promise<void>((resolve) => (wake = resolve));
    if (failure) throw failure;
    const buffer = free.pop()!;
    const { bytesRead } = await file.read(buffer, 0, Math.min(READ_SIZE, to - at), at);
    if (failure) throw failure;
    if (bytesRead === 0) throw new Error(`the file ended at byte ${at} of ${to}: it changed during the upload`);
    at += bytesRead;
    request.write(buffer.subarray(0, bytesRead), (err) => {
      if (err) return stop(err);
      free.push(buffer);
      wake?.();
    });
    onSent(at);
  }
  request.end();
}

/** As `sendRest`, through a fetch of the caller's own. */
async function streamThroughFetch(
  fetch: typeof globalThis.fetch,
  path: string,
  url: string,
  first: number,
  total: number,
  options: UploadOptions,
): Promise<number | UploadResult> {
  const source = createReadStream(path, { start: first, highWaterMark: 1024 * 1024 });
  const idle = idleAbort(url, options.idleMs);
  let sent = first;
  source.on('data', (chunk) => {
    idle.touch();
    options.onProgress?.((sent += chunk.length), total);
  });
  const signal = options.signal ? AbortSignal.any([options.signal, idle.signal]) : idle.signal;
  try {
    const response = await fetch(url, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': `bytes ${first}-${total - 1}/${total}` },
      body: Readable.toWeb(source) as ReadableStream<Uint8Array>,
      duplex: 'half',
      signal,
    } as RequestInit);
    idle.stop();
    return await heldBy(response);
  } finally {
    idle.stop();
    source.destroy();
  }
}

/** A signal aborted once `ms` pass without a `touch()` (fetch pulling the next chunk): the bound of a streamed PUT. */
function idleAbort(url: string, ms: number | undefined): { signal: AbortSignal; touch(): void; stop(): void } {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const touch = () => {
    if (ms === undefined) return;
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new ResponseTimeoutError(url, ms)), ms);
  };
  touch();
  return { signal: controller.signal, touch, stop: () => clearTimeout(timer) };
}

async function heldBy(response: Response): Promise<number | UploadResult> {
  const text = response.status === 308 ? '' : await response.text().catch(() => '');
  const body = jsonOrText(text);
  const answer = { status: response.status, range: response.headers.get('range'), type: response.headers.get('content-type'), body };
  return held(answer, response.url, () => ApiError.of(response, body));
}

function jsonOrText(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return text;
  }
}

type UploadAnswer = { status: number; range: string | null; type: string | null; body: unknown };

/**
 * What an answer says the server holds: bytes (308 with its `Range`), the upload's result (200),
 * or the refusal thrown. A 200 that is not JSON is not the service's (a proxy's page).
 */
function held(answer: UploadAnswer, url: string, refusal: () => ApiError): number | UploadResult {
  const { status, range, body } = answer;
  if (status === 200 && typeof body === 'object' && body !== null) return body as UploadResult;
  if (status === 200) throw new UnexpectedAnswerError(status, answer.type ?? '', typeof body === 'string' ? body : '', url);
  if (status === 308) {
    const end = /^bytes=0-(\d+)$/.exec(range ?? '');
    return end ? Number(end[1]) + 1 : 0;
  }
  throw refusal();
}
