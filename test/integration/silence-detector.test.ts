import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createFfmpegSilenceDetector, parseSilences } from '../../lib/adapters/ffmpeg/silence';
import { createToolbox } from '../../lib/app/agent-toolbox';
import { AppError } from '../../lib/domain/errors';
import { compositionDuration } from '../../lib/domain/edl';
import { clip, composition, context, MAIN_ID } from '../fixtures/agent-model';

const run = promisify(execFile);
const { ffmpeg } = resolveFfmpegPaths();
const ffmpegMakes = (args: string[], out: string) =>
  run(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args, out], { timeout: 60_000 });
const tone = (seconds: number) => ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=16000:duration=${seconds}`];
const quiet = (seconds: number) => ['-f', 'lavfi', '-i', `aevalsrc=0:s=16000:d=${seconds}`];
/** Within 20 ms: silencedetect reports the sample where the level crossed, a few ms from the edit. */
const near = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= 0.02, `${what}: ${actual} ≈ ${expected}`);

/** Real ffmpeg on files it made: tone, silence, tone, silence; a video without sound; espeak-ng speech with pauses. */
describe('ffmpeg SilenceDetector (real ffmpeg)', function () {
  this.timeout(60_000);
  let dir: string;
  let cacheDir: string;
  const detector = (settings?: { noiseDb: number; minSeconds: number }) =>
    createFfmpegSilenceDetector({ ffmpegPath: ffmpeg, blobs: { localPath: (key) => join(dir, key) }, cacheDir, settings });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'silence-'));
    cacheDir = join(dir, 'cache');
    // 0–1 tone, 1–2.5 silence, 2.5–3.5 tone, 3.5–4.2 silence (open at the end of the file).
    await ffmpegMakes(
      [...tone(1), ...quiet(1.5), ...tone(1), ...quiet(0.7), '-filter_complex', '[0][1][2][3]concat=n=4:v=0:a=1', '-c:a', 'pcm_s16le'],
      join(dir, 'tones.wav'),
    );
    await ffmpegMakes(['-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10:duration=1', '-c:v', 'mpeg4'], join(dir, 'mute.mp4'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the silences of tone, silence, tone, silence, closing the last at the end of the file', async () => {
    const found = await detector().detect('tones.wav');
    assert.equal(found.length, 2, JSON.stringify(found));
    near(found[0].from, 1, 'first silence starts');
    near(found[0].to, 2.5, 'first silence ends');
    near(found[1].from, 3.5, 'second silence starts');
    near(found[1].to, 4.2, 'second silence ends with the file');
  });

  it('keeps the answer per blob: a second call reads the cache, other settings measure again', async () => {
    const first = await detector().detect('tones.wav');
    assert.equal(readdirSync(cacheDir).filter((f) => f.endsWith('.json')).length, 1);
    assert.deepEqual(
      readdirSync(cacheDir).filter((f) => f.endsWith('.tmp')),
      [],
      'no temporary file is left',
    );
    await run('cp', [join(dir, 'tones.wav'), join(dir, 'kept.wav')]);
    const measured = await detector().detect('kept.wav');
    unlinkSync(join(dir, 'kept.wav'));
    assert.deepEqual(await detector().detect('kept.wav'), measured, 'read from the cache: the blob is gone');
    assert.deepEqual(measured, first);
    // Only silences of at least 1 s: the 0.7 s one at the end is not one.
    const longer = await createFfmpegSilenceDetector({
      ffmpegPath: ffmpeg,
      blobs: { localPath: (k) => join(dir, k) },
      cacheDir,
      settings: { noiseDb: -35, minSeconds: 1 },
    }).detect('tones.wav');
    assert.equal(longer.length, 1);
  });

  it('answers no silences for a video without sound', async () => {
    assert.deepEqual(await detector().detect('mute.mp4'), []);
  });

  it('refuses a file that is not media with a non-retriable invalid_input', async () => {
    writeFileSync(join(dir, 'junk.wav'), 'not audio at all');
    await assert.rejects(
      detector().detect('junk.wav'),
      (err: unknown) => err instanceof AppError && err.code === 'invalid_input' && !err.retriable,
    );
  });

  it('stops when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('job cancelled'));
    await assert.rejects(detector().detect('tones.wav', { signal: controller.signal }), /job cancelled/);
  });

  it('cuts the measured silences: the composition shrinks by exactly their length', async () => {
    const silences = await detector().detect('tones.wav');
    const model = {
      project_id: 'p',
      media: [{ ref: 'tones.wav', duration: 4.2, has_video: false, words: [] }],
      compositions: [composition({ clips: [clip('tones.wav', 0, 4.2)] })],
    };
    const result = createToolbox().run(
      model,
      { name: 'remove_silences', arguments: { longer_than: 1 } },
      context({ silences: new Map([['tones.wav', silences]]) }),
    );
    assert.ok(result.ok, JSON.stringify(result));
    const after = result.model.compositions.find((c) => c.composition_id === MAIN_ID)!;
    const long = silences.filter((s) => s.to - s.from > 1);
    assert.equal(long.length, 1);
    assert.equal(compositionDuration(after.clips), Math.round((4.2 - (long[0].to - long[0].from)) * 1000) / 1000);
    assert.deepEqual(after.clips, [clip('tones.wav', 0, long[0].from), clip('tones.wav', long[0].to, 4.2)]);
  });

  it('finds the pauses of espeak-ng speech', async function () {
    const espeak = await run('espeak-ng', ['--version']).then(
      () => true,
      () => false,
    );
    if (!espeak) {
      console.log('      skipped: espeak-ng not installed');
      return this.skip();
    }
    await run('espeak-ng', ['-m', '-w', join(dir, 'speech.wav'), 'Hello there. <break time="1500ms"/> This is after the pause.'], {
      timeout: 30_000,
    });
    const found = await detector().detect('speech.wav');
    const pause = found.filter((s) => s.to - s.from >= 1.3);
    assert.equal(pause.length, 1, `one pause of about 1.5 s: ${JSON.stringify(found)}`);
    assert.ok(pause[0].from > 0.3, 'after the first words');
  });

  it('parses ffmpeg output: pairs, a negative start clamped, an open silence closed at the decoded end', () => {
    const out = [
      'lavfi.silence_start=-0.002',
      'lavfi.silence_end=0.5',
      'out_time_us=1000000',
      'lavfi.silence_start=1.2',
      'out_time_us=2500000',
      'progress=end',
    ].join('\n');
    assert.deepEqual(parseSilences(out), [
      { from: 0, to: 0.5 },
      { from: 1.2, to: 2.5 },
    ]);
    assert.deepEqual(parseSilences(''), []);
  });
});
