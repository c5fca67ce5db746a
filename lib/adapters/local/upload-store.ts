import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError, conflict, invalidInput } from '../../domain/errors';
import { isUuid } from '../../domain/ids';
import type { UploadState, UploadStore } from '../../ports/upload-store';
import { storageFault, syncDirectory } from './blob-store';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files';

/**
 * UploadStore on a local folder: `<root>/<asset>.part` holds the bytes received so far (its size
 * is the progress: every write is awaited whole and a failed one is truncated away) and
 * `<root>/<asset>.json` the completion mark, until `forget`. `root` must be on the blob store's file system so
 * that `complete` is a rename (a folder inside the blob root, e.g. `blobs.localPath('uploads')`).
 * `localPath` is the BlobStore's, which checks the key.
 */
export function createLocalUploadStore(options: { root: string; localPath: (key: string) => string }): UploadStore {
  const root = resolve(options.root);
  const partOf = (id: string) => join(root, `${id}.part`);
  const markOf = (id: string) => join(root, `${id}.json`);
  // Asset id → the request in progress: the offset an append started from (undefined while
  // completing), and when it ends.
  const busy = new Map<string, { offset: number | undefined; ended: Promise<void> }>();

  const claim = (id: string, offset?: number): (() => void) => {
    if (busy.has(id)) throw conflict('another request to this upload is still being received; retry when it ends', 'uploading');
    let end!: () => void;
    busy.set(id, { offset, ended: new Promise<void>((resolve) => (end = resolve)) });
    return () => {
      busy.delete(id);
      end();
    };
  };

  async function received(id: string): Promise<UploadState> {
    const [size, mark] = await Promise.all([sizeOf(partOf(id)), readMark(markOf(id))]);
    if (mark && size === null) return { bytes: mark.size, complete: true, blobKey: mark.blob_key };
    return { bytes: busy.get(id)?.offset ?? size ?? 0, complete: false };
  }

  /** As `received`, once the request in progress has ended, or `settleMs` has passed. */
  async function settled(id: string, settleMs: number): Promise<UploadState> {
    const running = busy.get(id);
    if (running && settleMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([running.ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, settleMs)))]);
      clearTimeout(timer);
    }
    return received(id);
  }

  return {
    received: (assetId, { settleMs = 0 } = {}) => guarded(() => settled(idOf(assetId), settleMs)),

    append: (assetId, offset, source, { total, length, signal }) =>
      guarded(async () => {
        const id = idOf(assetId);
        if (!Number.isSafeInteger(offset) || offset < 0 || offset > total) throw invalidInput(`offset ${offset} is not within 0..${total}`);
        const release = claim(id, offset);
        try {
          if ((await received(id)).complete) throw conflict('the upload is already complete', 'complete');
          await mkdir(root, { recursive: true, mode: PRIVATE_DIR_MODE });
          const file = await open(partOf(id), constants.O_WRONLY | constants.O_CREAT, PRIVATE_FILE_MODE);
          try {
            const { size } = await file.stat();
            if (size !== offset) throw conflict(`the upload has ${size} bytes: continue at offset ${size}, not ${offset}`, 'incomplete');
            const bytes = await appendTo(file, offset, source, Math.min(total - offset, length ?? Infinity), total, signal);
            return { bytes, complete: bytes === total };
          } finally {
            await file.close();
          }
        } finally {
          release();
        }
      }),

    complete: (assetId, blobKey) =>
      guarded(async () => {
        const id = idOf(assetId);
        const part = partOf(id);
        const target = options.localPath(blobKey);
        const release = claim(id);
        try {
          const size = await sizeOf(part);
          const mark = await readMark(markOf(id));
          if (size === null) {
            if (mark) return { size: mark.size };
            throw conflict('nothing of this upload has been received', 'incomplete');
          }
          // The mark first: a crash before the rename leaves both, which `received` reads as not complete yet.
          await writeMark(markOf(id), { blob_key: blobKey, size });
          await mkdir(dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
          await rename(part, target);
          await syncDirectory(dirname(target));
          await syncDirectory(root);
          return { size };
        } finally {
          release();
        }
      }),

    discard: (assetId) =>
      guarded(async () => {
        await rm(partOf(idOf(assetId)), { force: true });
      }),

    forget: (assetId) =>
      guarded(async () => {
        const id = idOf(assetId);
        await rm(partOf(id), { force: true });
        await rm(markOf(id), { force: true });
      }),
  };
}

/**
 * Writes what `source` yields at `offset` on; answers the new size. Refused data (beyond `limit`)
 * drops this call's bytes; a failing source keeps the bytes fully written before it failed.
 */
async function appendTo(
  file: FileHandle,
  offset: number,
  source: Readable,
  limit: number,
  total: number,
  signal?: AbortSignal,
): Promise<number> {
  let written = 0;
  let refused = false;
  try {
    await pipeline(
      source,
      async (chunks: AsyncIterable<Buffer | string>) => {
        for await (const chunk of chunks) {
          const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          if (written + bytes.length > limit) {
            refused = true;
            const declared =
              offset + written + bytes.length > total ? `the declared size of ${total} bytes` : `the ${limit} bytes declared for this part`;
            throw new AppError('payload_too_large', `more data than ${declared}`);
          }
          for (let done = 0; done < bytes.length;) {
            done += (await file.write(bytes, done, bytes.length - done, offset + written + done)).bytesWritten;
          }
          written += bytes.length;
        }
      },
      { signal },
    );
  } catch (err) {
    // A write that failed half-way may have left part of its chunk: cut back to whole ones.
    await file.truncate(refused ? offset : offset + written);
    await file.sync();
    throw err;
  }
  await file.sync();
  return offset + written;
}

/** Written once, before the move; never rewritten, so that `forget` removes it for good. */
type Mark = { blob_key: string; size: number };

async function readMark(path: string): Promise<Mark | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Mark;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Temp file, fsync, rename, fsync the folder: the mark is there whole or not at all. */
async function writeMark(path: string, mark: Mark): Promise<void> {
  // A name of its own: two writers of one mark must not share a temp file.
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const file = await open(temp, 'w', PRIVATE_FILE_MODE);
  try {
    await file.writeFile(JSON.stringify(mark));
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, path);
  await syncDirectory(dirname(path));
}

async function sizeOf(path: string): Promise<number | null> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function idOf(assetId: string): string {
  // The id names files: anything but a UUID could climb out of the folder.
  if (!isUuid(assetId)) throw invalidInput(`asset id ${JSON.stringify(assetId)} is not a UUID`);
  return assetId.toLowerCase();
}

/** Storage faults become retriable `unavailable` errors naming no path; the original is the cause. */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const fault = storageFault(err);
    if (fault !== err) throw fault;
    if ((err as NodeJS.ErrnoException)?.code === 'EXDEV') {
      throw Object.assign(
        new AppError('internal_error', 'upload staging and media storage are on different file systems', { retriable: false }),
        {
          cause: err,
        },
      );
    }
    throw err;
  }
}
