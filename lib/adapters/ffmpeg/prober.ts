import { basename, resolve } from 'node:path';
import type { Logger } from 'pino';
import { AppError } from '../../domain/errors';
import { READABLE_DEMUXERS, SUPPORTED_MEDIA } from '../../domain/media-formats';
import type { MediaProber, MediaType, ProbeResult } from '../../ports/media';
import { spawnOffLoop, type Spawn } from './spawner';

const MAX_STDOUT_BYTES = 4 * 1024 * 1024;
const MAX_STDERR_BYTES = 64 * 1024;
/** How much of ffprobe's stderr goes to the log when it cannot read a file. */
const LOGGED_STDERR_CHARS = 2000;

/** What a user is told of any file ffprobe cannot read: the same words whatever its stderr said. */
export const NOT_MEDIA = `the file is not media the service can read; supported are ${SUPPORTED_MEDIA}`;

/** Demuxers that only ever hold still pictures (ffprobe names them `<codec>_pipe` or `image2`). */
const STILL_IMAGE_FORMAT = /^(image2|[a-z0-9]+_pipe)$/;

interface FfprobeStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  duration?: string;
  nb_frames?: string;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  sample_rate?: string;
  channels?: number;
  tags?: { rotate?: string };
  side_data_list?: { rotation?: number }[];
  disposition?: { attached_pic?: number };
}
interface FfprobeOutput {
  format?: { format_name?: string; duration?: string; tags?: { major_brand?: string } };
  streams?: FfprobeStream[];
}

/**
 * MediaProber on ffprobe's JSON output; the process is killed on timeout or abort. It runs from
 * the spawner thread (`spawn`, spawner.ts) unless told otherwise, off the caller's event loop. `logger`
 * receives ffprobe's stderr when it cannot read a file: the detail is the operator's, never the
 * user's (it names server paths and heap addresses).
 */
export function createFfprobeProber(options: { ffprobePath: string; timeoutMs?: number; logger?: Logger; spawn?: Spawn }): MediaProber {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const spawn = options.spawn ?? spawnOffLoop;
  return {
    async probe(relativePath, probeOptions = {}) {
      // An absolute path is never read as an option ("-x") or a protocol ("http:", "concat:").
      const path = resolve(relativePath);
      const args = [
        ...['-v', 'error', '-protocol_whitelist', 'file', '-format_whitelist', READABLE_DEMUXERS.join(',')],
        ...['-print_format', 'json', '-show_format', '-show_streams', path],
      ];
      const run = await runFfprobe(spawn, options.ffprobePath, args, timeoutMs, probeOptions.signal);
      if (run.code === 0) return classify(parseOutput(run.stdout));
      options.logger?.info(
        { file: basename(path), exit_code: run.code, stderr: run.stderr.slice(0, LOGGED_STDERR_CHARS) },
        'ffprobe could not read a media file',
      );
      throw new AppError('invalid_input', NOT_MEDIA, { retriable: false });
    },
  };
}

function runFfprobe(spawn: Spawn, bin: string, args: string[], timeoutMs: number, signal?: AbortSignal) {
  return spawn(bin, args, {
    timeoutMs,
    signal,
    abortMessage: 'the probe was aborted',
    stdout: { maxBytes: MAX_STDOUT_BYTES, onTooMuch: () => new AppError('invalid_input', 'the media file has too much metadata to probe') },
    stderr: { keep: 'head', maxBytes: MAX_STDERR_BYTES },
    onTimeout: () => new AppError('invalid_input', `probing the media file took longer than ${timeoutMs / 1000} s`),
    onSpawnError: (err) => new AppError('internal_error', `cannot run ffprobe at ${bin}: ${err.message}`),
  });
}

function parseOutput(stdout: string): FfprobeOutput {
  try {
    return JSON.parse(stdout) as FfprobeOutput;
  } catch {
    throw new AppError('internal_error', 'ffprobe printed output that is not JSON');
  }
}

function classify(output: FfprobeOutput): ProbeResult {
  const formatName = output.format?.format_name ?? 'unknown';
  const streams = output.streams ?? [];
  // Cover art in audio files is a video stream flagged attached_pic; it is not picture content.
  const pictures = streams.filter((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1);
  const hasAudio = streams.some((s) => s.codec_type === 'audio');
  const still = pictures.length > 0 && (STILL_IMAGE_FORMAT.test(formatName) || pictures.every((s) => isSingleFrame(s, formatName)));
  const hasVideo = pictures.length > 0 && !still;
  const type: MediaType = hasVideo ? 'video' : hasAudio ? 'audio' : still ? 'image' : 'other';

  const picture = type === 'video' || type === 'image' ? pictures[0] : undefined;
  const durationSeconds = type === 'image' ? undefined : duration(output);
  const brand = output.format?.tags?.major_brand?.trim();
  return {
    type,
    formatName,
    ...(brand && { brand }),
    audioCodecs: streams.filter((s) => s.codec_type === 'audio').map(codecName),
    videoCodecs: pictures.map(codecName),
    hasAudio,
    hasVideo,
    ...(durationSeconds !== undefined && { durationSeconds }),
    ...(picture?.width && picture.height && { width: picture.width, height: picture.height }),
    ...renderProperties(
      type === 'video' ? picture : undefined,
      picture,
      streams.find((s) => s.codec_type === 'audio'),
    ),
  };
}

/** What a render needs beyond the size: frame rate (moving pictures only), rotation, and the first audio stream's rate and channels. */
function renderProperties(moving: FfprobeStream | undefined, picture: FfprobeStream | undefined, audio: FfprobeStream | undefined) {
  const frameRate = moving && (rate(moving.avg_frame_rate) ?? rate(moving.r_frame_rate));
  const rotation = picture && rotationOf(picture);
  const sampleRate = Number(audio?.sample_rate);
  return {
    ...(frameRate && { frameRate }),
    ...(rotation !== undefined && { rotation }),
    ...(Number.isInteger(sampleRate) && sampleRate > 0 && { sampleRate }),
    ...(audio?.channels && audio.channels > 0 && { channels: audio.channels }),
  };
}

/** "30000/1001" → 29.97; "0/0" (unknown) → undefined. */
function rate(text: string | undefined): number | undefined {
  const [num, den] = (text ?? '').split('/').map(Number);
  const value = den ? num / den : NaN;
  return Number.isFinite(value) && value > 0 && value <= 1000 ? Math.round(value * 1000) / 1000 : undefined;
}

/**
 * Degrees clockwise, 0–270. ffprobe before 5.0 prints the `rotate` tag (clockwise); later ones
 * only the display matrix's `rotation` (counter-clockwise, so its negative).
 */
function rotationOf(stream: FfprobeStream): number | undefined {
  const tag = Number(stream.tags?.rotate);
  const matrix = stream.side_data_list?.find((d) => typeof d.rotation === 'number')?.rotation;
  const clockwise = Number.isFinite(tag) && stream.tags?.rotate !== undefined ? tag : matrix !== undefined ? -matrix : 0;
  return (((Math.round(clockwise / 90) * 90) % 360) + 360) % 360;
}

const codecName = (stream: FfprobeStream): string => stream.codec_name ?? 'unknown';

/** A one-frame GIF still reports a frame delay as its duration, so for GIF the frame count alone decides. */
function isSingleFrame(stream: FfprobeStream, formatName: string): boolean {
  return stream.nb_frames === '1' && (formatName === 'gif' || seconds(stream.duration) === undefined);
}

function duration(output: FfprobeOutput): number | undefined {
  const fromStreams = (output.streams ?? []).map((s) => seconds(s.duration)).filter((d): d is number => d !== undefined);
  const value = seconds(output.format?.duration) ?? (fromStreams.length > 0 ? Math.max(...fromStreams) : undefined);
  return value === undefined ? undefined : Math.round(value * 1000) / 1000;
}

/** ffprobe prints numbers as strings and "N/A" when unknown. */
function seconds(value: string | undefined): number | undefined {
  const n = value === undefined ? NaN : Number(value);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}
