import { open, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from './errors';

export type UploadOptions = {
  /** Bytes per PUT (8 MiB unless told); each part is read into memory. */
  partSize?: number;
  /** Bytes the server holds after each part (the first call says where a resumed upload starts). */
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
  /** A part that fails (connection lost, 5xx) is resumed from what the server holds, this many times in a row (3 unless told). */
  retries?: number;
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
  const total = (await stat(path)).size;
  const partSize = options.partSize ?? 8 * 1024 * 1024;
  const file = await open(path, 'r');
  try {
    let failures = 0;
    let held = await ask(fetch, url, total, options.signal);
    while (typeof held === 'number') {
      options.onProgress?.(held, total);
      const length = Math.min(partSize, total - held);
      const part = Buffer.alloc(length);
      await file.read(part, 0, length, held);
      try {
        held = await send(fetch, url, part, held, total, options.signal);
        failures = 0;
      } catch (err) {
        const retriable = !(err instanceof ApiError) || err.status >= 500 || err.status === 429;
        if (options.signal?.aborted || !retriable || ++failures > (options.retries ?? 3)) throw err;
        await sleep(Math.min(200 * 2 ** failures, 5000), undefined, { signal: options.signal });
        held = await ask(fetch, url, total, options.signal);
      }
    }
    options.onProgress?.(total, total);
    return held;
  } finally {
    await file.close();
  }
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

async function heldBy(response: Response): Promise<number | UploadResult> {
  if (response.status === 200) return (await response.json()) as UploadResult;
  if (response.status === 308) {
    const range = /^bytes=0-(\d+)$/.exec(response.headers.get('range') ?? '');
    return range ? Number(range[1]) + 1 : 0;
  }
  throw ApiError.of(response, await response.json().catch(() => null));
}
