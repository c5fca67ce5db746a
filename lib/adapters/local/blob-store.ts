import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../domain/errors';
import type { BlobStore } from '../../ports/blob-store';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files';
import { removeOrphanedTemporariesOnce, temporaryPath } from './process-temporaries';

/**
 * A segment starts with a letter or digit: this refuses `.`, `..` and hidden names, so a key can
 * never collide with the `.…tmp` files that `put` writes beside the blob.
 */
/** Reads of a blob go in pieces of this size: a render is sent in a sixteenth of the calls 64 KiB pieces take. */
const READ_CHUNK = 1 << 20;

const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._~+=@-]{0,254}$/;

/** BlobStore on a local folder (or a shared volume mounted at the same path by every service). */
export function createLocalBlobStore(options: { root: string; maxBytes?: number }): BlobStore {
  const root = resolve(options.root);
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
  const pathOf = (key: string) => join(root, ...safeSegments(key));

  return {
    localPath: pathOf,
    async put(key, source, putOptions = {}) {
      const target = pathOf(key);
      try {
        await mkdir(dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
        return await writeAtomically(target, source, maxBytes, putOptions.signal);
      } catch (err) {
        throw storageFault(err);
      }
    },
    async exists(key) {
      try {
        return (await stat(pathOf(key))).isFile();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
    async open(key) {
      const path = pathOf(key);
      try {
        const info = await stat(path);
        if (!info.isFile()) return null;
        return {
          size: info.size,
          modified: info.mtime,
          read: (range) => createReadStream(path, { highWaterMark: READ_CHUNK, ...(range && { start: range.start, end: range.end }) }),
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw storageFault(err);
      }
    },
  };
}

// The storage itself failed, not the file being written: the job is retried, never failed for it.
const STORAGE_CODES = new Map([
  ['EACCES', 'media storage is not writable (permission denied)'],
  ['EPERM', 'media storage is not writable (permission denied)'],
  ['EROFS', 'media storage is on a read-only file system'],
  ['ENOSPC', 'media storage is full'],
  ['EDQUOT', 'media storage is over its quota'],
  ['EIO', 'media storage reported an I/O error'],
  ['ENOTDIR', 'media storage is misconfigured (a file stands where a folder should be)'],
]);

/**
 * Maps storage failures to a retriable `unavailable` error whose message names no server path
 * (the message can reach API users through a job result); the original stays as `cause`.
 */
export function storageFault(err: unknown): unknown {
  const message = STORAGE_CODES.get((err as NodeJS.ErrnoException)?.code ?? '');
  if (!message) return err;
  return Object.assign(new AppError('unavailable', message, { retriable: true }), { cause: err });
}

function safeSegments(key: string): string[] {
  const segments = key.split('/');
  if (key.includes('\0') || !segments.every((s) => SAFE_SEGMENT.test(s))) {
    throw new AppError('internal_error', `unsafe blob key ${JSON.stringify(key)}: expected relative path segments of [A-Za-z0-9._~+=@-]`, {
      retriable: false,
    });
  }
  return segments;
}

/** Writes a temp file beside the target, fsyncs it, then renames: readers see the whole blob or none. */
async function writeAtomically(target: string, source: Readable, maxBytes: number, signal?: AbortSignal): Promise<{ size: number }> {
  // What a process killed mid-write left here goes, the first time this process writes here (process-temporaries.ts).
  await removeOrphanedTemporariesOnce(dirname(target));
  const temp = temporaryPath(dirname(target), basename(target), 'tmp');
  const file = await open(temp, 'wx', PRIVATE_FILE_MODE);
  let size = 0;
  try {
    const sink = async (chunks: AsyncIterable<Buffer | string>) => {
      for await (const chunk of chunks) {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        size += bytes.length;
        if (size > maxBytes) throw new AppError('payload_too_large', `the media file is larger than the limit of ${maxBytes} bytes`);
        await file.write(bytes);
      }
    };
    // pipeline destroys the source too on abort or error, so the sender stops producing.
    await pipeline(source, sink, { signal });
    await file.sync();
    await file.close();
    await rename(temp, target);
  } catch (err) {
    await file.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw err;
  }
  await syncDirectory(dirname(target));
  return { size };
}

/** Makes the rename itself durable across a power loss, not just the file's bytes. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
