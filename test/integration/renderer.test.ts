import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createFfmpegRenderer } from '../../lib/adapters/ffmpeg/renderer';
import { createLocalBlobStore } from '../../lib/adapters/local/blob-store';
import { renderCached } from '../../lib/app/render-cache';
import type { Clip } from '../../lib/domain/edl';
import { audioDelay, type RenderMedia, type RenderSpec } from '../../lib/domain/render-plan';
import type { Renderer } from '../../lib/ports/renderer';
import { waitFor } from '../fixtures/wait';
import { bandLevel, colourAt, durationOf, integratedLoudness, processesMentioning, streamsOf } from '../fixtures/media-measure';

const run = promisify(execFile);
const { ffmpeg } = resolveFfmpegPaths();
const make = (args: string[], out: string) =>
  run(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args, out], { timeout: 60_000 });

/** Real ffmpeg on small files it made: a red-then-blue clip whose tone changes with its colour, a tone, a still. */
describe('ffmpeg Renderer (real ffmpeg)', function () {
  this.timeout(120_000);
  let dir: string;
  let out: string;
  const renderer = () => createFfmpegRenderer({ ffmpegPath: ffmpeg, blobs: { localPath: (key) => join(dir, key) } });
  const FRAME_RATE = 25;
  const video: RenderMedia = {
    blob: 'colours.mp4',
    kind: 'video',
    hasAudio: true,
    width: 320,
    height: 240,
    frameRate: FRAME_RATE,
    rotation: 0,
  };
  const tone: RenderMedia = { blob: 'tone.wav', kind: 'audio', hasAudio: true };
  const high: RenderMedia = { blob: 'high.wav', kind: 'audio', hasAudio: true };
  const still: RenderMedia = { blob: 'still.png', kind: 'image', hasAudio: false, width: 64, height: 48 };
  const spec = (clips: Clip[], extra: Partial<RenderSpec> = {}): RenderSpec => ({
    clips,
    media: new Map<string, RenderMedia>([
      ['colours', video],
      ['tone', tone],
      ['high', high],
      ['still', still],
    ]),
    mediaType: 'Video',
    frame: { width: 320, height: 240 },
    ...extra,
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'render-'));
    out = join(dir, 'out');
    mkdirSync(out);
    // 0–2 s red with a 440 Hz tone, 2–4 s blue with a 1000 Hz tone.
    await make(
      [
        ...[
          '-f',
          'lavfi',
          '-i',
          `color=c=red:s=320x240:r=${FRAME_RATE}:d=2`,
          '-f',
          'lavfi',
          '-i',
          `color=c=blue:s=320x240:r=${FRAME_RATE}:d=2`,
        ],
        ...[
          '-f',
          'lavfi',
          '-i',
          'sine=frequency=440:sample_rate=48000:duration=2',
          '-f',
          'lavfi',
          '-i',
          'sine=frequency=1000:sample_rate=48000:duration=2',
        ],
        ...['-filter_complex', '[0:v][2:a][1:v][3:a]concat=n=2:v=1:a=1[v][a]', '-map', '[v]', '-map', '[a]'],
        ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '50', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
      ],
      join(dir, 'colours.mp4'),
    );
    // Quiet on purpose: the loudness target has work to do.
    await make(
      ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=16000:duration=8', '-af', 'volume=-30dB', '-c:a', 'pcm_s16le'],
      join(dir, 'tone.wav'),
    );
    await make(['-f', 'lavfi', '-i', 'sine=frequency=1000:sample_rate=44100:duration=3', '-c:a', 'pcm_s16le'], join(dir, 'high.wav'));
    await make(['-f', 'lavfi', '-i', 'color=c=green:s=64x48', '-frames:v', '1'], join(dir, 'still.png'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('renders the clips after cuts: the duration is the composition’s, to the frame, as MP4 H.264/AAC with faststart', async () => {
    const target = join(out, 'cut.mp4');
    // Two cuts: 1–2 s and 3–3.5 s of the source go.
    const result = await renderer().render(
      spec([
        { media: 'colours', in: 0, out: 1 },
        { media: 'colours', in: 2, out: 3 },
        { media: 'colours', in: 3.5, out: 4 },
      ]),
      target,
    );
    assert.ok(Math.abs((await durationOf(target)) - 2.5) <= 1 / FRAME_RATE, `duration ${await durationOf(target)}`);
    // 2.5 s is 62.5 frames at 25 fps: the planned duration is whole frames, within one of the composition's.
    assert.ok(Math.abs(result.durationSeconds - 2.5) <= 1 / FRAME_RATE, `planned ${result.durationSeconds}`);
    const streams = await streamsOf(target);
    assert.deepEqual(
      streams.map((s) => [s.codec_type, s.codec_name]),
      [
        ['video', 'h264'],
        ['audio', 'aac'],
      ],
    );
    // Never upscaled past the source: 320x240 in a 320x240 frame.
    assert.deepEqual([streams[0].width, streams[0].height], [320, 240]);
    // +faststart: the index (moov) comes before the media data (mdat).
    const head = readFileSync(target)
      .subarray(0, 64 * 1024)
      .toString('latin1');
    assert.ok(head.indexOf('moov') >= 0 && head.indexOf('moov') < head.indexOf('mdat'), 'moov before mdat');
  });

  it('plays what follows the cut right after it: the picture and the tone change at the cut point', async () => {
    const target = join(out, 'tone-change.mp4');
    await renderer().render(
      spec([
        { media: 'colours', in: 0, out: 1 },
        { media: 'colours', in: 2, out: 3 },
      ]),
      target,
    );
    const before = await colourAt(target, 1 - 1 / FRAME_RATE);
    const after = await colourAt(target, 1);
    assert.ok(before[0] > 200 && before[2] < 60, `red before the cut: ${before}`);
    assert.ok(after[2] > 200 && after[0] < 60, `blue from the cut's first frame: ${after}`);
    const justBefore = { low: await bandLevel(target, 0.9, 0.08, 440), high: await bandLevel(target, 0.9, 0.08, 1000) };
    const justAfter = { low: await bandLevel(target, 1.02, 0.08, 440), high: await bandLevel(target, 1.02, 0.08, 1000) };
    assert.ok(justBefore.low > justBefore.high + 15, `440 Hz before the cut: ${JSON.stringify(justBefore)}`);
    assert.ok(justAfter.high > justAfter.low + 15, `1000 Hz right after the cut: ${JSON.stringify(justAfter)}`);
  });

  it('shows a still for its clip length and an audio-only clip over black', async () => {
    const target = join(out, 'still.mp4');
    await renderer().render(
      spec([
        { media: 'still', in: 0, out: 1.5 },
        { media: 'tone', in: 0, out: 1 },
      ]),
      target,
    );
    assert.ok(Math.abs((await durationOf(target)) - 2.5) <= 1 / FRAME_RATE);
    const green = await colourAt(target, 0.7);
    assert.ok(green[1] > 100 && green[0] < 60 && green[2] < 60, `the still, green: ${green}`);
    const black = await colourAt(target, 2);
    assert.ok(Math.max(...black) < 30, `black under the sound: ${black}`);
  });

  it('renders an audio-only composition as M4A/AAC with no picture', async () => {
    const target = join(out, 'audio.m4a');
    const result = await renderer().render(
      spec(
        [
          { media: 'tone', in: 0.5, out: 2 },
          { media: 'high', in: 1, out: 2.25 },
        ],
        { mediaType: 'Audio' },
      ),
      target,
    );
    assert.deepEqual(
      (await streamsOf(target)).map((s) => [s.codec_type, s.codec_name]),
      [['audio', 'aac']],
    );
    assert.ok(Math.abs((await durationOf(target)) - 2.75) <= 0.03, `duration ${await durationOf(target)}`);
    assert.equal(result.width, undefined);
  });

  it('mixes a multitrack sequence with its offsets', async () => {
    const sequence: RenderMedia = {
      kind: 'sequence',
      tracks: [
        { source: tone as never, offset: 0 },
        { source: high as never, offset: 1 },
      ],
    };
    const target = join(out, 'sequence.m4a');
    const s = spec([{ media: 'seq', in: 0, out: 2 }], { mediaType: 'Audio' });
    await renderer().render({ ...s, media: new Map([...s.media, ['seq', sequence]]) }, target);
    assert.ok(Math.abs((await durationOf(target)) - 2) <= 0.03);
    const alone = await bandLevel(target, 0.3, 0.4, 1000);
    const mixed = await bandLevel(target, 1.3, 0.4, 1000);
    assert.ok(mixed > alone + 30, `the second track sounds from its offset: ${alone} then ${mixed} dB`);
    assert.ok((await bandLevel(target, 1.3, 0.4, 440)) > -60, 'the first track still sounds under it');
  });

  it('takes a track delay past what one adelay counts (12.5 hours)', async () => {
    const { ffmpeg } = resolveFfmpegPaths();
    const run = (filter: string) =>
      promisify(execFile)(ffmpeg, [
        ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=duration=1:sample_rate=48000'],
        ...['-af', filter, '-t', '0.2', '-f', 'null', '-'],
      ]);
    // One adelay of 45,000,000 ms is refused by the ffmpeg of @ffmpeg-installer ("Delay must be non negative"); newer builds may take it.
    await run(audioDelay(45_000));
  });

  it('brings the sound to the loudness target within 1 LU', async () => {
    const target = join(out, 'loud.m4a');
    await renderer().render(
      spec([{ media: 'tone', in: 0, out: 8 }], { mediaType: 'Audio', audio: { loudness_lufs: -16, noise_reduction: true } }),
      target,
    );
    const measured = await integratedLoudness(target);
    assert.ok(Math.abs(measured - -16) <= 1, `integrated loudness ${measured} LUFS`);
  });

  it('reports progress as it renders, ending at 1', async () => {
    const seen: number[] = [];
    await renderer().render(
      spec([{ media: 'colours', in: 0, out: 4 }], { resolution: '1080p', upscale: true }),
      join(out, 'progress.mp4'),
      {
        onProgress: (f) => seen.push(f),
      },
    );
    assert.ok(seen.length >= 2, `progress reports: ${seen}`);
    assert.equal(seen.at(-1), 1);
    assert.ok(
      seen.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= seen[i - 1])),
      `non-decreasing fractions: ${seen}`,
    );
  });

  it('cancel kills ffmpeg and leaves no file, partial or whole', async () => {
    const cancelDir = join(dir, 'cancel');
    mkdirSync(cancelDir);
    const controller = new AbortController();
    const started: number[] = [];
    const long = Array.from({ length: 30 }, () => ({ media: 'colours', in: 0, out: 4 }));
    const rendering = renderer().render(spec(long, { resolution: '4K', upscale: true }), join(cancelDir, 'cancelled.mp4'), {
      signal: controller.signal,
      onProgress: (f) => started.push(f),
    });
    await waitFor(() => started.length > 0 && processesMentioning(cancelDir).length > 0, { timeoutMs: 30_000, what: 'ffmpeg rendering' });
    let ended = false;
    // Handled at once: the rejection is looked at once the bounded wait is over.
    const outcome = rendering.then(
      () => new Error('the render finished although it was cancelled'),
      (err: unknown) => err,
    );
    void outcome.then(() => (ended = true));
    controller.abort();
    await waitFor(() => ended, { timeoutMs: 1000, what: 'the render to end within a second of the cancel' });
    assert.match(String(await outcome), /cancelled|abort/i);
    assert.deepEqual(processesMentioning(cancelDir), [], 'no ffmpeg left running');
    assert.deepEqual(readdirSync(cancelDir), [], 'no file left behind');
  });
});

describe('render cache on the local blob store (real ffmpeg)', function () {
  this.timeout(120_000);
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'render-cache-'));
    mkdirSync(join(dir, 'drive', 'project'), { recursive: true });
    await make(
      ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=16000:duration=3', '-c:a', 'pcm_s16le', '-f', 'wav'],
      join(dir, 'drive', 'project', 'voice'),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('renders once per clips, sources and settings: the same spec again reuses the blob and runs no ffmpeg', async () => {
    const blobs = createLocalBlobStore({ root: dir });
    const real = createFfmpegRenderer({ ffmpegPath: ffmpeg, blobs });
    let runs = 0;
    const renderer: Renderer = { render: (...args) => (runs++, real.render(...args)) };
    const scope = { driveId: 'drive', projectId: 'project' };
    const spec: RenderSpec = {
      clips: [{ media: 'voice.wav', in: 0.5, out: 2 }],
      media: new Map([['voice.wav', { blob: 'drive/project/voice', kind: 'audio', hasAudio: true }]]),
      mediaType: 'Audio',
      frame: { width: 16, height: 9 },
    };
    const first = await renderCached({ renderer, blobs }, scope, spec);
    const again = await renderCached({ renderer, blobs }, scope, spec);
    assert.deepEqual([first.cached, again.cached, runs], [false, true, 1]);
    assert.equal(again.blobKey, first.blobKey);
    assert.equal(again.durationSeconds, first.durationSeconds);
    assert.ok(Math.abs((await durationOf(blobs.localPath(first.blobKey))) - 1.5) <= 0.03);
    const louder = await renderCached({ renderer, blobs }, scope, { ...spec, audio: { loudness_lufs: -16 } });
    assert.deepEqual([louder.cached, runs], [false, 2]);
    assert.notEqual(louder.blobKey, first.blobKey);
    assert.deepEqual(
      readdirSync(join(dir, 'drive', 'project')).filter((f) => f.startsWith('.')),
      [],
      'no temporary file left',
    );
  });
});
