import { accessSync, constants, statSync } from 'node:fs';
import { basename, delimiter, join, resolve } from 'node:path';
import { AppError } from '../../domain/errors';
import type { Transcriber, Word } from '../../ports/transcriber';
import { runProcess } from '../system/child-process';
import { createChunkedTranscriber, type ChunkingOptions, type ChunkRecognizer } from './chunked';

export interface PocketsphinxOptions {
  /**
   * Absolute path of `pocketsphinx` (5.x, JSON output) or `pocketsphinx_continuous` (0.8 /
   * 5prealpha, as in Debian 12; `-time yes` lines). The format is chosen by the file name.
   */
  binaryPath: string;
  /** Deadline for one chunk; default 600 000 (a 5-minute chunk takes well under a minute). */
  timeoutMs?: number;
}

const MAX_STDOUT_BYTES = 8 * 1024 * 1024;
const STDERR_TAIL_BYTES = 4 * 1024;

/**
 * The pocketsphinx Transcriber. Only the English model ships with Debian, so any other language
 * fails the file at once (non-retriable) instead of producing English-sounding nonsense.
 */
export function createPocketsphinxTranscriber(options: PocketsphinxOptions & ChunkingOptions): Transcriber {
  const chunked = createChunkedTranscriber('pocketsphinx', createPocketsphinxRecognizer(options), options);
  return {
    name: chunked.name,
    async transcribe(path, transcribeOptions) {
      const language = englishOrFail(transcribeOptions.language);
      const result = await chunked.transcribe(path, { ...transcribeOptions, language });
      return result && { ...result, language };
    },
  };
}

export function createPocketsphinxRecognizer(options: PocketsphinxOptions): ChunkRecognizer {
  const continuous = basename(options.binaryPath).startsWith('pocketsphinx_continuous');
  const timeoutMs = options.timeoutMs ?? 600_000;
  return {
    async transcribeChunk(wavPath, { language, signal }) {
      englishOrFail(language);
      const wav = resolve(wavPath);
      const args = continuous ? ['-infile', wav, '-time', 'yes'] : ['-loglevel', 'ERROR', 'single', wav];
      const stdout = await run(options.binaryPath, args, timeoutMs, signal);
      return { words: continuous ? parseContinuousOutput(stdout) : parseJsonLines(stdout), language: 'en' };
    },
  };
}

/** `pocketsphinx` (5.x) or else `pocketsphinx_continuous` on PATH; empty PATH entries (the current folder) are skipped. */
export function findPocketsphinx(pathEnv: string | undefined = process.env.PATH): string | undefined {
  const dirs = (pathEnv ?? '').split(delimiter).filter((dir) => dir !== '');
  for (const name of ['pocketsphinx', 'pocketsphinx_continuous']) {
    const found = dirs.map((dir) => join(dir, name)).find(isExecutableFile);
    if (found) return found;
  }
  return undefined;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function englishOrFail(language: string | null): 'en' {
  if (language === null || /^en([-_].*)?$/i.test(language)) return 'en';
  throw new AppError('invalid_input', `pocketsphinx has only an English model and cannot transcribe language "${language}"`, {
    retriable: false,
  });
}

// ---- output formats --------------------------------------------------------------------------

/** Silence, sentence marks and noise tokens (`<sil>`, `<s>`, `[NOISE]`, `++UH++`) are not words. */
const FILLER = /^(<.*>|\[.*\]|\+\+.*\+\+|\(NULL\))$/;

const FRAME_SECONDS = 0.01;
const round = (seconds: number) => Math.round(seconds * 1000) / 1000;

function toWord(token: string, start: number, end: number, probability: number | undefined): Word | null {
  if (FILLER.test(token)) return null;
  // "the(2)" is the second pronunciation of "the" in the dictionary.
  const text = token.replace(/\(\d+\)$/, '');
  const confidence = probability === undefined || !Number.isFinite(probability) ? 1 : Math.min(1, Math.max(0, probability));
  return { text, start: round(start), end: round(Math.max(start, end)), confidence: Math.round(confidence * 1000) / 1000, speaker: null };
}

/**
 * `pocketsphinx_continuous -time yes`: per utterance, its text on one line, then one line per
 * token: `word start end posterior`, times in seconds from the start of the file. `end` is the
 * start of the token's last 10 ms frame, so the word lasts until a frame later.
 */
export function parseContinuousOutput(stdout: string): Word[] {
  const words: Word[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?(?:e-?\d+)?)$/.exec(line.trim());
    const word = m && toWord(m[1], Number(m[2]), Number(m[3]) + FRAME_SECONDS, Number(m[4]));
    if (word) words.push(word);
  }
  return words;
}

type JsonToken = { t?: unknown; b?: unknown; d?: unknown; p?: unknown };

/** `pocketsphinx single` (5.x): one JSON object per utterance, `w` its tokens with begin `b`, duration `d`, probability `p`. */
export function parseJsonLines(stdout: string): Word[] {
  const words: Word[] = [];
  for (const line of stdout.split('\n').filter((l) => l.trim().startsWith('{'))) {
    let utterance: { w?: unknown };
    try {
      utterance = JSON.parse(line) as { w?: unknown };
    } catch {
      throw new AppError('internal_error', 'pocketsphinx printed a line that is not JSON', { retriable: false });
    }
    for (const token of Array.isArray(utterance.w) ? (utterance.w as JsonToken[]) : []) {
      if (typeof token.t !== 'string' || typeof token.b !== 'number' || typeof token.d !== 'number') continue;
      const word = toWord(token.t, token.b, token.b + token.d, typeof token.p === 'number' ? token.p : undefined);
      if (word) words.push(word);
    }
  }
  return words;
}

// ---- the process -----------------------------------------------------------------------------

async function run(bin: string, args: string[], timeoutMs: number, signal: AbortSignal): Promise<string> {
  const { code, stdout, stderr } = await runProcess(bin, args, {
    timeoutMs,
    signal,
    abortMessage: 'the transcription was aborted',
    stdout: {
      maxBytes: MAX_STDOUT_BYTES,
      onTooMuch: () => new AppError('internal_error', 'pocketsphinx printed too much output', { retriable: false }),
    },
    // pocketsphinx logs a lot before any error: the tail is what explains a failure.
    stderr: { keep: 'tail', maxBytes: STDERR_TAIL_BYTES },
    onTimeout: () => new AppError('unavailable', `pocketsphinx took longer than ${timeoutMs / 1000} s on one chunk`, { retriable: false }),
    onSpawnError: (err) => new AppError('internal_error', `cannot run pocketsphinx at ${bin}: ${err.message}`),
  });
  if (code === 0) return stdout;
  const fatal = /^FATAL: .*$/m.exec(stderr)?.[0];
  throw new AppError('internal_error', `pocketsphinx failed: ${fatal ?? lastLine(stderr) ?? `exit code ${code}`}`, {
    retriable: false,
  });
}

const lastLine = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .pop();
