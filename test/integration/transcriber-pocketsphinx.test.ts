import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createPocketsphinxTranscriber, findPocketsphinx, parseJsonLines } from '../../lib/adapters/transcriber/pocketsphinx';
import { AppError } from '../../lib/domain/errors';
import { waitFor } from '../fixtures/wait';

const run = promisify(execFile);
/** Whether a running process names a path under `dir` in its arguments (ffmpeg and pocketsphinx do). */
const processesReading = async (dir: string) =>
  (await run('ps', ['-eo', 'args'])).stdout.split('\n').some((line) => line.includes(dir) && !line.startsWith('ps '));
const SENTENCE = 'Hello world. This is a test of the speech recognition system. The quick brown fox jumps over the lazy dog.';

/** Real pocketsphinx on speech synthesised by espeak-ng; structure is asserted, not accuracy. */
describe('pocketsphinx Transcriber (real pocketsphinx, espeak-ng speech)', function () {
  this.timeout(60_000);
  const binaryPath = findPocketsphinx();
  const { ffmpeg } = resolveFfmpegPaths();
  let dir: string;
  let tempDir: string;
  let speech: string;

  before(async function () {
    const espeak = await run('espeak-ng', ['--version']).then(
      () => true,
      () => false,
    );
    if (!binaryPath || !espeak) {
      console.log(`      skipped: ${[!binaryPath && 'pocketsphinx', !espeak && 'espeak-ng'].filter(Boolean).join(' and ')} not installed`);
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'sphinx-'));
    tempDir = mkdtempSync(join(tmpdir(), 'sphinx-chunks-'));
    speech = join(dir, 'speech.wav');
    await run('espeak-ng', ['-w', speech, SENTENCE], { timeout: 30_000 });
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  });

  const transcriber = (chunkSeconds?: number) =>
    createPocketsphinxTranscriber({ binaryPath: binaryPath!, ffmpegPath: ffmpeg, tempDir, chunkSeconds });

  it('transcribes speech into ordered, word-timed English words', async () => {
    const result = await transcriber().transcribe(speech, { language: null, signal: new AbortController().signal });
    assert.ok(result);
    const { words, language } = result;
    assert.equal(language, 'en');
    assert.ok(words.length >= 3, `only ${words.length} words: ${JSON.stringify(words)}`);
    for (const [i, w] of words.entries()) {
      assert.match(w.text, /^[^\s<>[\]()]+$/, `word ${i} has text without filler marks: ${JSON.stringify(w)}`);
      assert.ok(w.start < w.end, `word ${i} starts before it ends: ${JSON.stringify(w)}`);
      assert.ok(w.confidence >= 0 && w.confidence <= 1, `word ${i} confidence is 0..1`);
      assert.equal(w.speaker, null);
      if (i > 0) assert.ok(w.start > words[i - 1].start, `word ${i} starts after word ${i - 1}`);
    }
    assert.deepEqual(readdirSync(tempDir), [], 'chunk files are deleted');
  });

  it('keeps media time across chunks', async () => {
    const result = await transcriber(3).transcribe(speech, { language: 'en', signal: new AbortController().signal });
    const starts = result!.words.map((w) => w.start);
    assert.ok(
      starts.some((s) => s >= 3),
      `words after the first 3-second chunk are shifted: ${starts.join(', ')}`,
    );
    assert.deepEqual(
      [...starts].sort((a, b) => a - b),
      starts,
    );
  });

  it('stops pocketsphinx within a second of an abort', async () => {
    const controller = new AbortController();
    const pending = transcriber().transcribe(speech, { language: null, signal: controller.signal });
    // Abort once the first chunk's WAV exists, i.e. while ffmpeg or pocketsphinx is working on it.
    await waitFor(() => readdirSync(tempDir).some((sub) => readdirSync(join(tempDir, sub)).includes('chunk.wav')), {
      what: 'the chunk file',
      intervalMs: 5,
    });
    const aborted = Date.now();
    controller.abort(new Error('job cancelled'));
    await assert.rejects(pending, /job cancelled/);
    assert.ok(Date.now() - aborted < 1000, `took ${Date.now() - aborted} ms`);
    await waitFor(async () => !(await processesReading(tempDir)), { what: 'no process to work on the chunk any more' });
    await waitFor(() => readdirSync(tempDir).length === 0, { what: 'the chunk files to be deleted' });
  });

  it('refuses a language other than English at once, non-retriable', async () => {
    await assert.rejects(transcriber().transcribe(speech, { language: 'de', signal: new AbortController().signal }), (err: unknown) => {
      assert.ok(err instanceof AppError && err.retriable === false);
      assert.match(err.message, /only an English model.*"de"/);
      return true;
    });
  });
});

describe('pocketsphinx 5.x output', () => {
  it('reads words from `pocketsphinx single` JSON lines, dropping fillers and pronunciation marks', () => {
    const stdout =
      '{"b":0.000,"d":1.500,"p":0.900,"t":"go forward","w":[{"t":"<sil>","b":0.000,"d":0.200,"p":0.990},' +
      '{"t":"go","b":0.200,"d":0.300,"p":0.800},{"t":"forward(2)","b":0.500,"d":0.600,"p":1.0002},{"t":"[NOISE]","b":1.1,"d":0.4,"p":1}]}\n';
    assert.deepEqual(parseJsonLines(stdout), [
      { text: 'go', start: 0.2, end: 0.5, confidence: 0.8, speaker: null },
      { text: 'forward', start: 0.5, end: 1.1, confidence: 1, speaker: null },
    ]);
  });
});
