/** Media: what ffprobe tells about a file, and (later) normalize and render. */

export type MediaType = 'audio' | 'video' | 'image' | 'other';

export interface ProbeResult {
  readonly type: MediaType;
  /** Seconds; absent for images and files with no timeline. */
  readonly durationSeconds?: number;
  readonly formatName: string;
  readonly hasAudio: boolean;
  readonly hasVideo: boolean;
  readonly width?: number;
  readonly height?: number;
}

export interface MediaProber {
  /** Probes a local file. Rejects with a non-retriable error when the file is not media ffprobe can read. */
  probe(path: string, options?: { signal?: AbortSignal }): Promise<ProbeResult>;
}
