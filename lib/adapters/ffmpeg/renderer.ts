import { mkdir, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import { AppError } from '../../domain/errors';
import { READABLE_DEMUXERS } from '../../domain/media-formats';
import { planRender } from '../../domain/render-plan';
import type { BlobStore } from '../../ports/blob-store';
import type { Renderer } from '../../ports/renderer';
import { streamProcess } from '../system/child-process';
import { removeOrphanedTemporaries, temporaryPath } from '../local/process-temporaries';

const MAX_STDERR_BYTES = 16 * 1024;
const LOGGED_STDERR_CHARS = 2000;

/**
 * Renderer on ffmpeg: runs the plan of lib/domain/render-plan.ts, reading `-progress` from stdout
 * line by line. ffmpeg writes a temporary name beside `output` (the same file system, so the final
 * rename is atomic); on failure or cancel the process group is killed, waited for, and the
 * temporary file removed; what a crashed worker left is removed by the next render there
 * (lib/adapters/local/process-temporaries.ts). Spawned from this thread, not the spawner's (spawner.ts): a render is one
 * fork per several seconds of work, and its progress has to come back while it runs.
 */
export function createFfmpegRenderer(options: {
  ffmpegPath: string;
  blobs: Pick<BlobStore, 'localPath'>;
  /** A render taking longer is killed: default 4 hours. */
  timeoutMs?: number;
  logger?: Logger;
}): Renderer {
  const timeoutMs = options.timeoutMs ?? 4 * 3600_000;
  return {
    async render(spec, output, { signal, onProgress } = {}) {
      if (spec.clips.length === 0)
        throw new AppError('unprocessable_entity', 'the composition has no clips to render', { retriable: false });
      const target = resolve(output);
      // Hidden, as the blob store's own temporary files: never a name a blob key can take.
      const temporary = temporaryPath(dirname(target), basename(target), 'part');
      const plan = planRender(spec, (blob) => resolve(options.blobs.localPath(blob)), READABLE_DEMUXERS.join(','), temporary);
      const progress = progressReader(plan.durationSeconds, onProgress);
      // Private like the blob store's own folders: renders are users' media.
      await mkdir(dirname(target), { recursive: true, mode: 0o700 });
      await removeOrphanedTemporaries(dirname(target), options.logger);
      try {
        const run = await streamProcess(options.ffmpegPath, plan.args, {
          timeoutMs,
          signal,
          abortMessage: 'the render was cancelled',
          stderr: { keep: 'tail', maxBytes: MAX_STDERR_BYTES },
          onStdoutLine: progress,
          onTimeout: () => new AppError('internal_error', `the render took longer than ${timeoutMs / 1000} s`, { retriable: false }),
          onSpawnError: (err) => new AppError('internal_error', `cannot run ffmpeg at ${options.ffmpegPath}: ${err.message}`),
        });
        if (run.code !== 0) throw renderFailed(run.code, run.stderr, options.logger);
        await rename(temporary, target);
      } catch (err) {
        await unlink(temporary).catch(() => undefined);
        throw err;
      }
      onProgress?.(1);
      const { size } = await stat(target);
      return { durationSeconds: plan.durationSeconds, sizeBytes: size, ...(plan.width && { width: plan.width, height: plan.height }) };
    },
  };
}

/**
 * A line reader for ffmpeg's `-progress` blocks (`key=value` lines, each block ending in
 * `progress=continue|end`, about two a second): reports out_time over the planned duration.
 */
export function progressReader(durationSeconds: number, onProgress?: (fraction: number) => void): (line: string) => void {
  let outSeconds = 0;
  return (line) => {
    const at = line.indexOf('=');
    if (at < 0) return;
    const key = line.slice(0, at).trim();
    const value = line.slice(at + 1).trim();
    // out_time_ms is in µs too: ffmpeg kept the misnamed key for old readers.
    if (key === 'out_time_us' || key === 'out_time_ms') {
      const n = Number(value);
      if (Number.isFinite(n) && n >= 0) outSeconds = n / 1e6;
    } else if (key === 'progress' && onProgress && durationSeconds > 0) {
      // The last block says `end` before the file is renamed: the caller's 1 comes after that.
      onProgress(Math.min(0.99, outSeconds / durationSeconds));
    }
  };
}

function renderFailed(code: number | null, stderr: string, logger?: Logger): AppError {
  logger?.warn({ exit_code: code, stderr: stderr.slice(-LOGGED_STDERR_CHARS) }, 'ffmpeg could not render a composition');
  // ffmpeg's words name server paths: the user gets a fixed message, the log the detail.
  const failure = new AppError('internal_error', 'the composition could not be rendered', { retriable: false });
  failure.cause = new Error(stderr.slice(-LOGGED_STDERR_CHARS));
  return failure;
}
