import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createOpenAiTranscriber, type OpenAiTranscriberOptions } from '../../lib/adapters/transcriber/openai';
import { AppError } from '../../lib/domain/errors';
import { startFakeOpenAiServer } from '../fixtures/fake-openai-server';
import { makeTestMedia } from '../fixtures/media';
import { failOnUncaughtException, waitFor } from '../fixtures/wait';

/** The openai adapter against a real multipart-parsing server on loopback, with real ffmpeg chunks. */
describe('openai Transcriber (fake OpenAI-compatible server, real ffmpeg)', function () {
  this.timeout(20_000);
  let dir: string;
  let tempDir: string;
  let twelve: string;
  let three: string;
  let server: Awaited<ReturnType<typeof startFakeOpenAiServer>>;
  const { ffmpeg } = resolveFfmpegPaths();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'openai-'));
    tempDir = mkdtempSync(join(tmpdir(), 'openai-chunks-'));
    twelve = await makeTestMedia(dir, 'wav', 12);
    three = await makeTestMedia(dir, 'mp3', 3);
    server = await startFakeOpenAiServer();
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(tempDir, { recursive: true, force: true });
  });
  failOnUncaughtException();

  const transcriber = (options: Partial<OpenAiTranscriberOptions> = {}) =>
    createOpenAiTranscriber({
      url: server.url,
      apiKey: 'sk-test',
      model: 'whisper-large-v3',
      ffmpegPath: ffmpeg,
      chunkSeconds: 5,
      tempDir,
      retryBaseMs: 10,
      ...options,
    });
  const transcribe = (path: string, language: string | null = null, signal = new AbortController().signal) =>
    transcriber().transcribe(path, { language, signal });

  /** Expects a non-retriable AppError: a transcription failure fails its file, not the job. */
  const failsFile = (message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof AppError, `expected an AppError, got ${String(err)}`);
    assert.equal(err.retriable, false, err.message);
    assert.match(err.message, message);
    return true;
  };

  it('sends each 5-second chunk as multipart and shifts its words by the chunk start', async () => {
    server.script(['ok']);
    const progress: number[] = [];
    const result = await transcriber().transcribe(twelve, {
      language: null,
      signal: new AbortController().signal,
      durationSeconds: 12,
      onProgress: (f) => progress.push(f),
    });

    assert.deepEqual(
      result?.words.map((w) => [w.text, w.start, w.end]),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map((s) => [`w${s % 5}`, s, s + 0.5]),
    );
    assert.ok(
      result?.words.every((w) => w.speaker === null && w.confidence === 0.905),
      'confidence is exp(avg_logprob) of the segment',
    );
    assert.equal(result?.language, 'en', '"english" is mapped to ISO 639-1');
    assert.deepEqual(
      server.received.map((r) => r.file?.seconds),
      [5, 5, 2],
    );
    for (const r of server.received) {
      assert.equal(r.path, '/v1/audio/transcriptions');
      assert.equal(r.authorization, 'Bearer sk-test');
      assert.deepEqual(r.fields.get('model'), ['whisper-large-v3']);
      assert.deepEqual(r.fields.get('response_format'), ['verbose_json']);
      assert.deepEqual(r.fields.get('timestamp_granularities[]'), ['word', 'segment']);
      assert.equal(r.file?.name, 'file');
      assert.equal(r.file?.contentType, 'audio/wav');
    }
    assert.equal(server.received[0].fields.get('language'), undefined, 'no language: the server detects it');
    assert.deepEqual(server.received[1].fields.get('language'), ['en'], 'later chunks keep the language the first one detected');
    assert.deepEqual(progress, [5 / 12, 10 / 12, 1]);
    assert.deepEqual(readdirSync(tempDir), [], 'chunk files are deleted');
  });

  it("fills each word's speaker from the diarized segment around it, when the server names speakers", async () => {
    server.script(['speakers']);
    const result = await transcribe(twelve);
    // Chunks of 5 s: A speaks each chunk's first 2 s (words at 0 and 1 s into it), B the rest.
    assert.deepEqual(
      result?.words.map((w) => [w.start, w.speaker]),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map((s) => [s, s % 5 < 2 ? 'A' : 'B']),
    );
    assert.ok(
      result?.words.every((w) => w.confidence === 0.905),
      'confidence still from the verbose segments',
    );
  });

  it('passes the language asked for with every chunk and reports it', async () => {
    server.script(['ok']);
    const result = await transcribe(twelve, 'de');
    assert.deepEqual(
      server.received.map((r) => r.fields.get('language')),
      [['de'], ['de'], ['de']],
    );
    assert.equal(result?.language, 'de');
  });

  it('sends no Authorization header without an API key', async () => {
    server.script(['ok']);
    await transcriber({ apiKey: undefined }).transcribe(three, { language: null, signal: new AbortController().signal });
    assert.equal(server.received.length, 1);
    assert.equal(server.received[0].authorization, undefined);
  });

  it('retries a 500, a dropped connection and a 429 (honouring Retry-After), then succeeds', async () => {
    server.script(['500', 'close-mid-response', '429', 'ok']);
    const started = Date.now();
    const result = await transcribe(three);
    assert.equal(server.received.length, 4);
    assert.ok(Date.now() - started >= 900, 'waited the 1 s of Retry-After, not the 10 ms backoff');
    assert.deepEqual(
      result?.words.map((w) => w.start),
      [0, 1, 2],
    );
  });

  it('fails the file, non-retriable, when the server keeps failing', async () => {
    server.script(['500']);
    await assert.rejects(
      transcriber({ attempts: 3 }).transcribe(three, { language: null, signal: new AbortController().signal }),
      failsFile(/failed 3 times; last: HTTP 500: The server had an error/),
    );
    assert.equal(server.received.length, 3);

    server.script(['close-mid-response']);
    await assert.rejects(
      transcriber({ attempts: 2 }).transcribe(three, { language: null, signal: new AbortController().signal }),
      failsFile(/closed the connection before the end of its answer/),
    );
  });

  it('retries when nothing listens, then fails the file', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const refused = transcriber({ url: `http://127.0.0.1:${port}/v1`, attempts: 2 });
    await assert.rejects(
      refused.transcribe(three, { language: null, signal: new AbortController().signal }),
      failsFile(/failed 2 times; last: could not connect.*connection refused/),
    );
  });

  it('does not retry a 401 and names the status and the server message', async () => {
    server.script(['401']);
    await assert.rejects(transcribe(three), failsFile(/HTTP 401: Incorrect API key provided/));
    assert.equal(server.received.length, 1);
  });

  it('fails clearly on an answer that is not JSON', async () => {
    server.script(['bad-json']);
    await assert.rejects(transcribe(three), failsFile(/answered with a body that is not JSON/));
  });

  it('stops within a second of an abort and closes the connection', async () => {
    server.script(['slow']);
    const controller = new AbortController();
    const pending = transcribe(twelve, null, controller.signal);
    await waitFor(() => server.received.length === 1, { what: 'the first chunk to arrive' });
    const aborted = Date.now();
    controller.abort(new Error('job cancelled'));
    await assert.rejects(pending, /job cancelled/);
    assert.ok(Date.now() - aborted < 1000, `took ${Date.now() - aborted} ms`);
    await waitFor(async () => (await server.connections()) === 0, { what: 'the connection to close' });
    await waitFor(() => readdirSync(tempDir).length === 0, { what: 'the chunk files to be deleted' });
  });

  it('gives up on a chunk after its request deadline', async () => {
    server.script(['slow']);
    await assert.rejects(
      transcriber({ requestTimeoutMs: 300 }).transcribe(three, { language: null, signal: new AbortController().signal }),
      failsFile(/did not answer within 0\.3 s/),
    );
  });

  it('resolves no words for a video without an audio stream', async () => {
    server.script(['ok']);
    const silent = await makeTestMedia(dir, 'silent-mp4', 2);
    assert.deepEqual(await transcribe(silent), { words: [], language: null });
    assert.equal(server.received.length, 0);
  });
});
