import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import { loadTranscript, storeTranscript } from '../../lib/app/transcripts';
import { AppError } from '../../lib/domain/errors';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { Word } from '../../lib/ports/transcriber';

/** About an hour of speech: 10 000 words, a few with a speaker and odd text. */
const hourOfWords = (): Word[] =>
  Array.from({ length: 10_000 }, (_, i) => ({
    text: i % 997 === 0 ? `"quoted" \\ ünïcode ${i}` : `word${i}`,
    start: i * 0.36,
    end: i * 0.36 + 0.3,
    confidence: (i % 100) / 100,
    speaker: i % 3 === 0 ? 'A' : null,
  }));

describe('transcripts (stored as blobs by content hash)', () => {
  let dir: string;
  let blobs: BlobStore;
  let puts: number;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'transcripts-'));
    const local = createLocalBlobStore({ root: dir });
    puts = 0;
    blobs = { ...local, put: (...args) => (puts++, local.put(...args)) };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('loads back exactly the words it stored, under the hash of the blob', async () => {
    const words = hourOfWords();
    const stored = await storeTranscript(blobs, words);

    assert.match(stored.key, /^transcripts\/[0-9a-f]{64}\.json$/);
    assert.equal(stored.key, `transcripts/${stored.sha256}.json`);
    assert.equal(stored.word_count, 10_000);
    const bytes = readFileSync(blobs.localPath(stored.key));
    assert.equal(createHash('sha256').update(bytes).digest('hex'), stored.sha256);
    assert.deepEqual(await loadTranscript(blobs, stored.key), words);
  });

  it('gives the same words the same key and writes them once, whatever the order of their fields', async () => {
    const words = hourOfWords().slice(0, 50);
    const reordered = words.map(({ speaker, confidence, end, start, text }) => ({ speaker, confidence, end, start, text }));
    const first = await storeTranscript(blobs, words);
    const second = await storeTranscript(blobs, reordered);
    assert.deepEqual(second, first);
    assert.equal(puts, 1);

    const other = await storeTranscript(blobs, [{ ...words[0], text: 'different' }, ...words.slice(1)]);
    assert.notEqual(other.key, first.key);
  });

  it('round-trips an empty transcript', async () => {
    const stored = await storeTranscript(blobs, []);
    assert.equal(stored.word_count, 0);
    assert.deepEqual(await loadTranscript(blobs, stored.key), []);
  });

  it('names the key of a transcript that is missing or malformed', async () => {
    const missing = `transcripts/${'0'.repeat(64)}.json`;
    await assert.rejects(
      loadTranscript(blobs, missing),
      (err: unknown) => err instanceof AppError && err.code === 'not_found' && err.message.includes(missing),
    );

    const stored = await storeTranscript(blobs, hourOfWords().slice(0, 2));
    writeFileSync(blobs.localPath(stored.key), '[{"text": 1}]');
    await assert.rejects(loadTranscript(blobs, stored.key), /is not a list of words/);
  });
});
