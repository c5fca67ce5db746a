import type { ProbedMedia } from '../domain/media-formats';

/** Media: what ffprobe tells about a file, and (later) normalize and render. */

export type MediaType = 'audio' | 'video' | 'image' | 'other';

/**
 * One probed file. `type` is the kind of content (cover art does not make a file video, a single
 * still picture is an image); whether the service imports it is `acceptMedia`'s decision
 * (lib/domain/media-formats), which reads the format, brand and codec names.
 */
export interface ProbeResult extends ProbedMedia {
  readonly type: MediaType;
  /** Seconds; absent for images and files with no timeline. */
  readonly durationSeconds?: number;
  /** ffprobe's demuxer name(s), e.g. `mov,mp4,m4a,3gp,3g2,mj2`; `unknown` when it names none. */
  readonly formatName: string;
  readonly hasAudio: boolean;
  readonly hasVideo: boolean;
  readonly width?: number;
  readonly height?: number;
  /** Frames per second of a video's picture (29.97 for 30000/1001). */
  readonly frameRate?: number;
  /** Degrees clockwise the picture is shown turned (0, 90, 180, 270); ffmpeg applies it when decoding. */
  readonly rotation?: number;
  /** Of the first audio stream. */
  readonly sampleRate?: number;
  readonly channels?: number;
}

export interface MediaProber {
  /** Probes a local file. Rejects with a non-retriable error, in words fit for a user, when the file is not media it can read. */
  probe(path: string, options?: { signal?: AbortSignal }): Promise<ProbeResult>;
}
