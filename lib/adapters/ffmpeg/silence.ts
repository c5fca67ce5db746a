import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { TimeRange } from '../../domain/agent/edits';
import { ms } from '../../domain/edl';
import { AppError } from '../../domain/errors';
import { READABLE_DEMUXERS } from '../../domain/media-formats';
import type { BlobStore } from '../../ports/blob-store';
import type { SilenceDetector } from '../../ports/silence-detector';
import { spawnOffLoop, type Spawn } from './spawner';
import { removeOrphanedTemporariesOnce, temporaryPath } from '../local/process-temporaries';

/**
 * SilenceDetector on ffmpeg's `silencedetect` filter: audio below `noiseDb` for at least
 * `minSeconds` is silence. `ametadata` prints each silence's start and end to stdout, and
 * `-progress` the time decoded, which closes a silence still open when the file ends.
 *
 * The answer is cached per blob and per settings as JSON under `cacheDir` (DATA_DIR/silences by
 * the composition root): a blob never changes, so the file is never stale; it is written to a
 * temporary name and renamed, so a reader sees it whole or not at all. Two calls for a blob not
 * yet cached both measure it (the same answer, written twice): rare enough, since one project's
 * agent turns do not run at once, not to be worth sharing a measurement across abort signals.
 */
export type SilenceSettings = { readonly noiseDb: number; readonly minSeconds: number };
export const DEFAULT_SILENCE: SilenceSettings = { noiseDb: -35, minSeconds: 0.1 };

const MAX_STDOUT_BYTES = 16 * 1024 * 1024;
const MAX_STDERR_BYTES = 16 * 1024;

export function createFfmpegSilenceDetector(options: {
  ffmpegPath: string;
  blobs: Pick<BlobStore, 'localPath'>;
  cacheDir: string;
  settings?: SilenceSettings;
  timeoutMs?: number;
  spawn?: Spawn;
}): SilenceDetector {
  const settings = options.settings ?? DEFAULT_SILENCE;
  const timeoutMs = options.timeoutMs ?? 30 * 60_000;
  const spawn = options.spawn ?? spawnOffLoop;
  return {
    async detect(blobKey, { signal } = {}) {
      signal?.throwIfAborted();
      const cached = join(options.cacheDir, `${cacheName(blobKey, settings)}.json`);
      const known = await readCache(cached);
      if (known) return known;
      const source = resolve(options.blobs.localPath(blobKey));
      const { code, stdout, stderr } = await spawn(options.ffmpegPath, ffmpegArgs(source, settings), {
        timeoutMs,
        signal,
        abortMessage: 'the silence detection was aborted',
        stdout: {
          maxBytes: MAX_STDOUT_BYTES,
          onTooMuch: () => new AppError('invalid_input', 'the media file has too many silences to list'),
        },
        stderr: { keep: 'head', maxBytes: MAX_STDERR_BYTES },
        onTimeout: () => new AppError('invalid_input', `finding the silences of the media file took longer than ${timeoutMs / 1000} s`),
        onSpawnError: (err) => new AppError('internal_error', `cannot run ffmpeg at ${options.ffmpegPath}: ${err.message}`),
      });
      let intervals: TimeRange[];
      if (code === 0) intervals = parseSilences(stdout);
      else if (/matches no streams/.test(stderr))
        intervals = []; // no audio: nothing is silent, nothing to cut
      else {
        const failure = new AppError('invalid_input', 'cannot read the audio of the media file', { retriable: false });
        failure.cause = new Error(stderr.slice(0, 2000));
        throw failure;
      }
      await writeCache(options.cacheDir, cached, intervals);
      return intervals;
    },
  };
}

function ffmpegArgs(source: string, { noiseDb, minSeconds }: SilenceSettings): string[] {
  return [
    // As the audio extractor: absolute path, file protocol only, demuxers of the import rule only.
    ...['-nostdin', '-hide_banner', '-nostats', '-loglevel', 'error', '-protocol_whitelist', 'file'],
    ...['-format_whitelist', READABLE_DEMUXERS.join(','), '-i', source, '-map', '0:a:0', '-vn', '-sn', '-dn'],
    ...['-af', `silencedetect=noise=${noiseDb}dB:d=${minSeconds},ametadata=mode=print:file=-`],
    ...['-progress', 'pipe:1', '-f', 'null', '-'],
  ];
}

/** Silences from ffmpeg's stdout: `lavfi.silence_start=`/`lavfi.silence_end=` pairs, a last open one closed at the decoded end. */
export function parseSilences(stdout: string): TimeRange[] {
  const intervals: TimeRange[] = [];
  let open: number | null = null;
  let decoded = 0;
  for (const line of stdout.split('\n')) {
    const [key, value] = line.trim().split('=');
    const n = Number(value);
    if (value === undefined || !Number.isFinite(n)) continue;
    if (key === 'lavfi.silence_start') open = Math.max(0, n);
    else if (key === 'lavfi.silence_end' && open !== null) {
      intervals.push({ from: ms(open), to: ms(n) });
      open = null;
    } else if (key === 'out_time_us' || key === 'out_time_ms') {
      decoded = Math.max(decoded, n / 1e6); // both are µs: ffmpeg kept the misnamed one for old readers
    }
  }
  if (open !== null && decoded > open) intervals.push({ from: ms(open), to: ms(decoded) });
  return intervals.filter((r) => r.to > r.from);
}

const cacheName = (blobKey: string, s: SilenceSettings): string =>
  createHash('sha256')
    .update(JSON.stringify([blobKey, s.noiseDb, s.minSeconds]))
    .digest('hex');

async function readCache(path: string): Promise<TimeRange[] | null> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as { intervals?: unknown };
    return Array.isArray(parsed.intervals) ? (parsed.intervals as TimeRange[]) : null;
  } catch {
    return null; // not measured yet (or a file from a crash mid-write under its own name: measured again)
  }
}

async function writeCache(dir: string, path: string, intervals: readonly TimeRange[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  // Named and cleaned up after a crash as the blob store's temporaries are (process-temporaries.ts).
  await removeOrphanedTemporariesOnce(dir);
  const temporary = temporaryPath(dir, basename(path), 'tmp');
  await writeFile(temporary, JSON.stringify({ intervals }));
  await rename(temporary, path);
}
