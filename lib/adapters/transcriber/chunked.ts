import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAudioChunkExtractor } from '../ffmpeg/audio';
import type { Transcriber, Transcription, Word } from '../../ports/transcriber';

/** Transcribes one short 16 kHz mono WAV file; word times are seconds from the start of that file. */
export interface ChunkRecognizer {
  transcribeChunk(wavPath: string, options: { language: string | null; signal: AbortSignal }): Promise<Transcription>;
}

export interface ChunkingOptions {
  ffmpegPath: string;
  /** Length of each piece sent to the engine; default 300 (5 minutes). */
  chunkSeconds?: number;
  /** Where the temporary WAV files go; default the system's temp folder. */
  tempDir?: string;
  /** Deadline for extracting one chunk with ffmpeg; default 120 s. */
  extractTimeoutMs?: number;
}

/** Shorter tails hold no word, and some engines refuse them ("audio too short"). */
const MIN_CHUNK_SECONDS = 0.1;

/**
 * A Transcriber that feeds `recognizer` the file's audio one chunk at a time: ffmpeg writes chunk
 * i to a temp WAV, the recognizer transcribes it, its words are shifted by the chunk's start and
 * the WAV is deleted before the next chunk. Memory stays flat whatever the file's length: only
 * the words accumulate. A word cut by a chunk boundary may be lost or heard twice; 5-minute chunks
 * make that rare, and overlap-and-merge is not worth its complexity yet.
 */
export function createChunkedTranscriber(name: string, recognizer: ChunkRecognizer, options: ChunkingOptions): Transcriber {
  const chunkSeconds = options.chunkSeconds ?? 300;
  if (!(chunkSeconds >= 1)) throw new Error(`chunkSeconds must be at least 1, not ${chunkSeconds}`);
  const extractor = createAudioChunkExtractor({ ffmpegPath: options.ffmpegPath, timeoutMs: options.extractTimeoutMs });

  return {
    name,
    async transcribe(path, { language, signal, onProgress, durationSeconds }) {
      signal.throwIfAborted();
      const dir = await mkdtemp(join(options.tempDir ?? tmpdir(), `transcribe-${name}-`));
      const wav = join(dir, 'chunk.wav');
      const words: Word[] = [];
      let detected: string | null = null;
      try {
        for (let start = 0; ; start += chunkSeconds) {
          const seconds = await extractor.extract(path, wav, { startSeconds: start, seconds: chunkSeconds }, { signal });
          if (seconds === 'no-audio-stream') break;
          if (seconds >= MIN_CHUNK_SECONDS) {
            // Once a chunk with speech named the language, later chunks are told it, so a quiet or
            // musical stretch cannot switch the transcript to another language halfway.
            const result = await recognizer.transcribeChunk(wav, { language: language ?? detected, signal });
            if (detected === null && result.words.length > 0) detected = result.language;
            for (const w of result.words) words.push({ ...w, start: round(w.start + start), end: round(w.end + start) });
          }
          await rm(wav, { force: true });
          if (seconds < chunkSeconds - 0.001) break; // the end of the audio
          if (durationSeconds) onProgress?.(Math.min(1, (start + chunkSeconds) / durationSeconds));
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      onProgress?.(1);
      return { words, language: language ?? detected };
    },
  };
}

/** Milliseconds are finer than any engine's timing; rounding hides float noise from the shift. */
const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
