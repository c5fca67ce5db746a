import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { AppError } from '../domain/errors';
import type { BlobStore } from '../ports/blob-store';
import type { Word } from '../ports/transcriber';

export interface StoredTranscript {
  /** `transcripts/<sha256>.json`, what a `MediaTranscribed` event references. */
  readonly key: string;
  readonly sha256: string;
  readonly word_count: number;
}

/** Words serialised per batch, so a long transcript never becomes one giant string. */
const BATCH = 500;

/**
 * Stores the words as a JSON array blob keyed by the hash of its bytes: the same words always give
 * the same key, and storing them again writes nothing (a redelivered import costs no space).
 */
export async function storeTranscript(
  blobs: BlobStore,
  words: readonly Word[],
  options: { signal?: AbortSignal } = {},
): Promise<StoredTranscript> {
  const hash = createHash('sha256');
  for (const piece of serialise(words)) hash.update(piece);
  const sha256 = hash.digest('hex');
  const key = `transcripts/${sha256}.json`;
  if (!(await blobs.exists(key))) await blobs.put(key, Readable.from(serialise(words)), options);
  return { key, sha256, word_count: words.length };
}

/** Loads the words stored under `key`; a missing or malformed blob is an AppError naming the key. */
export async function loadTranscript(blobs: BlobStore, key: string): Promise<Word[]> {
  let text: string;
  try {
    text = await readFile(blobs.localPath(key), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new AppError('not_found', `transcript ${key} does not exist`);
    throw err;
  }
  let words: unknown;
  try {
    words = JSON.parse(text);
  } catch {
    throw new AppError('internal_error', `transcript ${key} is not JSON`, { retriable: false });
  }
  if (!Array.isArray(words) || !words.every(isWord))
    throw new AppError('internal_error', `transcript ${key} is not a list of words`, { retriable: false });
  return words;
}

/**
 * Parsed transcripts kept by key, up to `maxWords` words in all, least recently used out first.
 * A key names its bytes (their sha256), so a kept transcript is never stale. Callers share the
 * arrays: they must not change them.
 */
export function keptTranscripts(blobs: BlobStore, maxWords = 200_000): (key: string) => Promise<readonly Word[]> {
  const kept = new Map<string, Word[]>();
  let words = 0;
  return async (key) => {
    const hit = kept.get(key);
    if (hit) {
      kept.delete(key);
      kept.set(key, hit);
      return hit;
    }
    const loaded = await loadTranscript(blobs, key);
    if (loaded.length > maxWords || kept.has(key)) return loaded;
    kept.set(key, loaded);
    words += loaded.length;
    for (const [oldest, w] of kept) {
      if (words <= maxWords) break;
      kept.delete(oldest);
      words -= w.length;
    }
    return loaded;
  };
}

/** Fixed key order, so equal words are equal bytes whatever order their objects were built in. */
function* serialise(words: readonly Word[]): Generator<string> {
  yield '[';
  for (let i = 0; i < words.length; i += BATCH) {
    const batch = words
      .slice(i, i + BATCH)
      .map(({ text, start, end, confidence, speaker }) => JSON.stringify({ text, start, end, confidence, speaker }));
    yield (i === 0 ? '\n' : ',\n') + batch.join(',\n');
  }
  yield '\n]\n';
}

function isWord(x: unknown): x is Word {
  const w = x as Word;
  return (
    typeof w === 'object' &&
    w !== null &&
    typeof w.text === 'string' &&
    typeof w.start === 'number' &&
    typeof w.end === 'number' &&
    typeof w.confidence === 'number' &&
    (w.speaker === null || typeof w.speaker === 'string')
  );
}
