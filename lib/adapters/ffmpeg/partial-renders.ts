import { createHash, randomBytes } from 'node:crypto';
import { readdir, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';

/**
 * The temporary files renders write (`.<target>.<host>-<pid>-<random>.part`, beside the target),
 * and their clean-up after a crash. A render cancelled or failed removes its own; a worker killed
 * mid-render (kill -9, out of memory, the host's power) cannot, and its ffmpeg, writing progress
 * into a pipe nobody reads any more, dies of SIGPIPE a moment later: the file would stay for good,
 * as large as the render had got. So each name says which process wrote it, and a render first
 * removes the partial files of this host's processes that are gone. Another host's are left
 * alone: whether its process lives cannot be told from here.
 */

/** This host, as a name part without dots (a host name may have them). */
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const PARTIAL = /\.([0-9a-f]{8})-(\d+)-[0-9a-f]{12}\.part$/;

export function partialRenderPath(target: string): string {
  return join(dirname(target), `.${basename(target)}.${HOST}-${process.pid}-${randomBytes(6).toString('hex')}.part`);
}

/** Removes the partial renders in `dir` that a process of this host, no longer running, left; resolves to their names. */
export async function removeOrphanedPartials(dir: string, log?: Logger): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    const m = PARTIAL.exec(name);
    if (!m || m[1] !== HOST || isRunning(Number(m[2]))) continue;
    await unlink(join(dir, name)).then(
      () => removed.push(name),
      () => undefined, // another render removed it first
    );
  }
  if (removed.length > 0) log?.warn({ dir, files: removed }, 'removed partial renders of a process that is gone (it crashed mid-render)');
  return removed;
}

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
