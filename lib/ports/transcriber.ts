/** Transcriber: speech in a local media file → word-timed text (DESIGN §4). */

/** One recognised word, in media time: the same words compositions derive their transcripts from. */
export type { Word } from '../domain/edl';
import type { Word } from '../domain/edl';

export interface TranscribeOptions {
  /** ISO 639-1 code ("en") of the speech, or null to let the engine detect it. */
  readonly language: string | null;
  /** Aborting stops the work (child processes, requests) within about a second and rejects with the signal's reason. */
  readonly signal: AbortSignal;
  /** Called with the fraction done (0..1) after each piece of the file; 1 once at the end. */
  readonly onProgress?: (fraction: number) => void;
  /** The file's duration, when known (from a probe); only used to report progress. */
  readonly durationSeconds?: number;
}

export interface Transcription {
  /** In order of `start`. Empty when the file has no audio stream or no speech. */
  readonly words: Word[];
  /** ISO 639-1 code when known: the one asked for, else the one the engine detected. */
  readonly language: string | null;
}

export interface Transcriber {
  /** 'openai' | 'pocketsphinx' | 'none' */
  readonly name: string;
  /**
   * Transcribes the audio of a local media file. Resolves null when this transcriber does not
   * transcribe ('none'). A file without an audio stream resolves `{words: [], language}`.
   * Failures are AppErrors; `retriable: false` means the file cannot be transcribed (bad input,
   * refused by the engine, engine down after the adapter's own retries): it fails that file, not the job.
   */
  transcribe(path: string, options: TranscribeOptions): Promise<Transcription | null>;
}
