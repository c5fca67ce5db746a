import { createHash, randomBytes } from 'node:crypto';
import { readdir, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';

/**
 * Temporary files written beside their target and renamed onto it when whole (a blob being
 * stored, a render), and their clean-up after a crash. A write that fails or is cancelled removes
 * its own; a process killed mid-write (kill -9, out of memory, the host's power) cannot, and the
 * file would stay for good, as large as it had got (a render's ffmpeg, writing progress into a
 * pipe nobody reads any more, dies of SIGPIPE a moment later). So each name says which process
 * wrote it, `.<name>.<host>-<pid>-<random>.<tmp|part>`, and the next write in that folder first
 * removes the temporaries of this host's processes that are gone. Another host's (a shared
 * volume) are left alone: whether its process lives cannot be told from here.
 */

/** This host, as a name part without dots (a host name may have them). */
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const TEMPORARY = /\.([0-9a-f]{8})-(\d+)-[0-9a-f]{12}\.(?:tmp|part)$/;

/** A hidden name in `dir` for a temporary of this process (`name`: what it will become, for whoever lists the folder). */
export function temporaryPath(dir: string, name: string, suffix: 'tmp' | 'part'): string {
  return join(dir, `.${name}.${HOST}-${process.pid}-${randomBytes(6).toString('hex')}.${suffix}`);
}

/** Removes the temporaries in `dir` that a process of this host, no longer running, left; resolves to their names. */
export async function removeOrphanedTemporaries(dir: string, log?: Logger): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    const m = TEMPORARY.exec(name);
    if (!m || m[1] !== HOST || isRunning(Number(m[2]))) continue;
    await unlink(join(dir, name)).then(
      () => removed.push(name),
      () => undefined, // removed by another writer first
    );
  }
  if (removed.length > 0) log?.warn({ dir, files: removed }, 'removed temporary files of a process that is gone (it crashed mid-write)');
  return removed;
}

/**
 * As `removeOrphanedTemporaries`, the first time this process writes in `dir` only: for writes as
 * frequent as blobs, into folders as large as the transcripts' (one file per transcript), a listing
 * per write would cost more than the write. What a crashed process left is removed by the next
 * process that writes there, since a crash is followed by a restart.
 */
export async function removeOrphanedTemporariesOnce(dir: string, log?: Logger): Promise<string[]> {
  if (swept.has(dir)) return [];
  swept.set(dir, true);
  return removeOrphanedTemporaries(dir, log);
}
const swept = new LRUCache<string, true>({ max: 10_000 });

function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
