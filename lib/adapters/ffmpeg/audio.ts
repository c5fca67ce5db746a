import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { AppError } from '../../domain/errors';
import { READABLE_DEMUXERS } from '../../domain/media-formats';
import { runProcess } from '../system/child-process';

/** What speech engines want: 16 kHz, mono, signed 16-bit little-endian PCM in a WAV file. */
export const SPEECH_SAMPLE_RATE = 16_000;
const BYTES_PER_SECOND = SPEECH_SAMPLE_RATE * 2;
const MAX_STDERR_BYTES = 64 * 1024;
const MAX_LOGGED_STDERR_CHARS = 2000;

export interface AudioChunkExtractor {
  /**
   * Writes `[startSeconds, startSeconds + seconds)` of the first audio stream of `input` to
   * `output` as a speech WAV. Resolves the seconds of audio written (0 past the end), or
   * 'no-audio-stream' when the file has none. Other failures are non-retriable AppErrors.
   */
  extract(
    input: string,
    output: string,
    range: { startSeconds: number; seconds: number },
    options?: { signal?: AbortSignal },
  ): Promise<number | 'no-audio-stream'>;
}

/** AudioChunkExtractor on ffmpeg; the process is killed on timeout or abort. */
export function createAudioChunkExtractor(options: { ffmpegPath: string; timeoutMs?: number }): AudioChunkExtractor {
  const timeoutMs = options.timeoutMs ?? 120_000;
  return {
    async extract(input, output, range, extractOptions = {}) {
      // Absolute paths are never read as options or protocols; the format whitelist keeps
      // playlists and indirections (HLS, concat) from opening any other file (see READABLE_DEMUXERS).
      const source = resolve(input);
      const target = resolve(output);
      const args = [
        ...['-nostdin', '-hide_banner', '-loglevel', 'error', '-protocol_whitelist', 'file'],
        ...['-format_whitelist', READABLE_DEMUXERS.join(',')],
        // Input seeking: fast, and exact for audio since ffmpeg decodes from the previous key frame.
        ...['-ss', range.startSeconds.toFixed(3), '-t', range.seconds.toFixed(3), '-i', source],
        // bitexact and no metadata: a plain 44-byte header whatever the input carried.
        ...['-map', '0:a:0', '-map_metadata', '-1', '-fflags', '+bitexact', '-vn', '-sn', '-dn'],
        ...['-ac', '1', '-ar', String(SPEECH_SAMPLE_RATE), '-c:a', 'pcm_s16le', '-f', 'wav', '-y', target],
      ];
      const hasAudio = await runFfmpeg(options.ffmpegPath, args, timeoutMs, extractOptions.signal);
      return hasAudio ? wavDataSeconds(target) : 'no-audio-stream';
    },
  };
}

/** Resolves false when ffmpeg reports that the input has no audio stream to map. */
async function runFfmpeg(bin: string, args: string[], timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
  const { code, stderr } = await runProcess(bin, args, {
    timeoutMs,
    signal,
    abortMessage: 'the audio extraction was aborted',
    stderr: { keep: 'head', maxBytes: MAX_STDERR_BYTES },
    onTimeout: () =>
      new AppError('invalid_input', `extracting audio from the media file took longer than ${timeoutMs / 1000} s`, { retriable: false }),
    onSpawnError: (err) => new AppError('internal_error', `cannot run ffmpeg at ${bin}: ${err.message}`),
  });
  if (code === 0) return true;
  // The one failure that is not a failure: a video without sound has no speech to transcribe.
  if (/matches no streams/.test(stderr)) return false;
  // ffmpeg's words name server paths and heap addresses: the user gets a fixed message, and
  // whoever logs the error gets them as its cause.
  const failure = new AppError('invalid_input', 'cannot read the audio of the media file', { retriable: false });
  failure.cause = new Error(stderr.slice(0, MAX_LOGGED_STDERR_CHARS));
  throw failure;
}

/** Seconds of 16 kHz mono 16-bit audio in a WAV file, from its `data` chunk's declared size. */
export async function wavDataSeconds(path: string): Promise<number> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const head = Buffer.alloc(Math.min(size, 4096));
    await file.read(head, 0, head.length, 0);
    const data = findDataChunk(head);
    if (!data) throw new AppError('internal_error', 'ffmpeg wrote a WAV file without a data chunk');
    // A size that runs past the file (a header never rewritten) is capped by what is there.
    return Math.min(data.size, size - data.offset) / BYTES_PER_SECOND;
  } finally {
    await file.close();
  }
}

function findDataChunk(head: Buffer): { offset: number; size: number } | undefined {
  if (head.length < 12 || head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WAVE') return undefined;
  for (let at = 12; at + 8 <= head.length;) {
    const id = head.toString('latin1', at, at + 4);
    const size = head.readUInt32LE(at + 4);
    if (id === 'data') return { offset: at + 8, size };
    at += 8 + size + (size % 2); // chunks are padded to an even length
  }
  return undefined;
}
