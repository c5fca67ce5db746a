import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import pino from 'pino';
import { createAudioChunkExtractor } from '../../lib/adapters/ffmpeg/audio';
import { createFfprobeProber, NOT_MEDIA } from '../../lib/adapters/ffmpeg/prober';
import { AppError } from '../../lib/domain/errors';
import { acceptMedia, SUPPORTED_MEDIA } from '../../lib/domain/media-formats';
import { makeMediaSamples, type SampleKind } from '../fixtures/media-files';
import { makeTestMedia } from '../fixtures/media';
import { isGone, waitFor } from '../fixtures/wait';

describe('MediaProber: ffprobe', () => {
  let dir: string;
  const prober = () => createFfprobeProber({ ffprobePath: resolveFfmpegPaths().ffprobe });

  before(() => (dir = mkdtempSync(join(tmpdir(), 'probe-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a WAV file as audio of about one second', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'wav'));
    assert.equal(result.type, 'audio');
    assert.equal(result.hasAudio, true);
    assert.equal(result.hasVideo, false);
    assert.ok(Math.abs((result.durationSeconds ?? 0) - 1) < 0.1, `duration ${result.durationSeconds}`);
  });

  it('reads an MP3 file as audio', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'mp3', 2));
    assert.equal(result.type, 'audio');
    assert.ok(Math.abs((result.durationSeconds ?? 0) - 2) < 0.2, `duration ${result.durationSeconds}`);
  });

  it('reads an MP4 with audio and video as video with its size', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'mp4'));
    assert.deepEqual(
      { type: result.type, hasAudio: result.hasAudio, hasVideo: result.hasVideo, width: result.width, height: result.height },
      { type: 'video', hasAudio: true, hasVideo: true, width: 160, height: 120 },
    );
    assert.ok(Math.abs((result.durationSeconds ?? 0) - 1) < 0.1);
  });

  it('reads what a render needs: frame rate, rotation, sample rate and channels', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'mp4'));
    assert.deepEqual(
      { frameRate: result.frameRate, rotation: result.rotation, sampleRate: result.sampleRate, channels: result.channels },
      { frameRate: 10, rotation: 0, sampleRate: 16_000, channels: 1 },
    );
    const wav = await prober().probe(await makeTestMedia(dir, 'wav'));
    assert.deepEqual([wav.frameRate, wav.rotation, wav.sampleRate, wav.channels], [undefined, undefined, 16_000, 1]);
  });

  it('reads a phone video’s rotation, clockwise, as ffmpeg applies it', async () => {
    const rotated = join(dir, 'rotated.mp4');
    const { ffmpeg } = resolveFfmpegPaths();
    const run = promisify(execFile);
    // Stream copy with a rotation: what a phone held upright writes.
    await run(ffmpeg, [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-i',
      await makeTestMedia(dir, 'silent-mp4'),
      '-c',
      'copy',
      '-metadata:s:v:0',
      'rotate=90',
      rotated,
    ]);
    // ffmpeg names the display matrix's angle counter-clockwise (old muxers read the tag either way round).
    const { stderr } = await run(ffmpeg, ['-hide_banner', '-i', rotated]).catch((err: { stderr: string }) => err);
    const counterClockwise = Number(/displaymatrix: rotation of (-?[\d.]+) degrees/.exec(stderr)?.[1]);
    assert.ok([90, -90, 270].includes(counterClockwise), stderr);
    const result = await prober().probe(rotated);
    assert.deepEqual([result.width, result.height, result.rotation], [160, 120, (360 - counterClockwise) % 360]);
  });

  it('reads an MP4 without audio as video', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'silent-mp4'));
    assert.equal(result.type, 'video');
    assert.equal(result.hasAudio, false);
  });

  it('reads a PNG as an image without a duration', async () => {
    const result = await prober().probe(await makeTestMedia(dir, 'png'));
    assert.equal(result.type, 'image');
    assert.equal(result.durationSeconds, undefined);
    assert.equal(result.width, 160);
  });

  it('rejects a text file with a non-retriable invalid_input error in fixed words, its stderr only in the log', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'just some words, not media\n');
    const logged: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    await assert.rejects(createFfprobeProber({ ffprobePath: resolveFfmpegPaths().ffprobe, logger }).probe(path), (err: unknown) => {
      assert.ok(err instanceof AppError);
      assert.equal(err.code, 'invalid_input');
      assert.equal(err.retriable, false);
      assert.equal(err.message, NOT_MEDIA);
      return true;
    });
    assert.equal(logged.length, 1);
    assert.match(String(logged[0].stderr), /Invalid data/, 'the detail goes to the log');
  });

  describe('a playlist that names a local file', () => {
    // ffprobe picks the HLS demuxer for a `.m3u8` name and the concat demuxer for `ffconcat` content.
    const playlists = (target: string) => ({
      'list.m3u8': `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:1,\n${target}\n#EXT-X-ENDLIST\n`,
      'list.ffconcat': `ffconcat version 1.0\nfile '${target}'\n`,
    });

    for (const name of ['list.m3u8', 'list.ffconcat'] as const) {
      it(`refuses ${name} alike whether the file exists or not`, async () => {
        const existing = await makeTestMedia(dir, 'wav');
        const messages: string[] = [];
        for (const target of [existing, join(dir, 'not-there.wav')]) {
          const path = join(mkdtempSync(join(dir, 'list-')), name);
          writeFileSync(path, playlists(target)[name]);
          await prober()
            .probe(path)
            .then(
              (result) => assert.fail(`${target} was read through the playlist: ${JSON.stringify(result)}`),
              (err: Error) => messages.push(err.message),
            );
        }
        assert.deepEqual(messages, [NOT_MEDIA, NOT_MEDIA]);
      });
    }

    it('is not read by the audio extractor either', async () => {
      const path = join(mkdtempSync(join(dir, 'list-')), 'list.m3u8');
      writeFileSync(path, playlists(await makeTestMedia(dir, 'wav'))['list.m3u8']);
      const extractor = createAudioChunkExtractor({ ffmpegPath: resolveFfmpegPaths().ffmpeg });
      await assert.rejects(extractor.extract(path, join(dir, 'chunk.wav'), { startSeconds: 0, seconds: 1 }), {
        code: 'invalid_input',
        message: 'cannot read the audio of the media file',
      });
    });
  });

  describe('a stuck ffprobe', () => {
    // A stand-in that records its pid and hangs, so the test can see the process really die.
    const hangingProbe = () => {
      const pidFile = join(dir, `pid-${Math.random().toString(36).slice(2)}`);
      const script = join(dir, `hang-${Math.random().toString(36).slice(2)}.sh`);
      writeFileSync(script, `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`);
      chmodSync(script, 0o755);
      const pid = () => waitFor(() => Number(readFileSync(pidFile, 'utf8').trim()), { what: 'the pid file' });
      return { script, pid };
    };

    it('is killed when the signal aborts, and the probe rejects with an abort error', async () => {
      const { script, pid } = hangingProbe();
      const controller = new AbortController();
      const probing = createFfprobeProber({ ffprobePath: script }).probe(join(dir, 'any.wav'), { signal: controller.signal });
      const childPid = await pid();
      controller.abort();
      await assert.rejects(probing, { name: 'AbortError' });
      await waitFor(() => isGone(childPid), { what: 'the ffprobe process to exit' });
    });

    it('is killed on timeout', async () => {
      const { script, pid } = hangingProbe();
      const probing = createFfprobeProber({ ffprobePath: script, timeoutMs: 300 }).probe(join(dir, 'any.wav'));
      const childPid = await pid();
      await assert.rejects(probing, { code: 'invalid_input', message: /took longer than/ });
      await waitFor(() => isGone(childPid), { what: 'the ffprobe process to exit' });
    });
  });

  describe('what the import rule makes of real files', () => {
    let samplesDir: string;
    let samples: Map<SampleKind, string>;

    before(async function () {
      this.timeout(120_000);
      samplesDir = mkdtempSync(join(tmpdir(), 'probe-samples-'));
      samples = await makeMediaSamples(samplesDir);
    });
    after(() => rmSync(samplesDir, { recursive: true, force: true }));

    const probeSample = async (ctx: Mocha.Context, kind: SampleKind) => {
      const path = samples.get(kind);
      if (path === undefined) {
        console.log(`      skipped: this ffmpeg build cannot encode ${kind}`);
        ctx.skip();
      }
      return prober().probe(path!);
    };

    const accepted: [SampleKind, 'audio' | 'video' | 'image'][] = [
      ['wav', 'audio'],
      ['flac', 'audio'],
      ['aac-adts', 'audio'],
      ['m4a-aac', 'audio'],
      ['mp4-aac-audio-only', 'audio'],
      ['mp3', 'audio'],
      ['mp3-cover-art', 'audio'],
      ['mp4-h264', 'video'],
      ['mov-h264', 'video'],
      ['mp4-hevc', 'video'],
      ['mov-hevc', 'video'],
      ['png', 'image'],
      ['jpeg', 'image'],
    ];
    for (const [kind, type] of accepted) {
      it(`imports ${kind} as ${type}`, async function () {
        const result = await probeSample(this, kind);
        assert.deepEqual(acceptMedia(result), { type });
        assert.equal(result.type, type);
        if (type === 'image') assert.equal(result.durationSeconds, undefined);
        else assert.ok(Math.abs((result.durationSeconds ?? 0) - 0.5) < 0.15, `duration ${result.durationSeconds}`);
      });
    }

    const refused: [SampleKind, string][] = [
      ['ogg-opus', 'Ogg container with Opus audio'],
      ['ogg-vorbis', 'Ogg container with Vorbis audio'],
      ['webm-vp9', 'Matroska/WebM container with VP9 video and Opus audio'],
      ['mkv-h264', 'Matroska/WebM container with H.264 video and AAC audio'],
      ['avi-mpeg4', 'AVI container with MPEG-4 Part 2 video and MP3 audio'],
      ['mp4-mpeg4', 'MP4 container with MPEG-4 Part 2 video and AAC audio'],
      ['3gp-h264', '3GP container with H.264 video and AAC audio'],
      ['gif', 'GIF image'],
      ['gif-animated', 'GIF image'],
    ];
    for (const [kind, what] of refused) {
      it(`refuses ${kind} naming it: ${what}`, async function () {
        const result = acceptMedia(await probeSample(this, kind));
        assert.deepEqual(result, { error_message: `unsupported media: ${what}; supported are ${SUPPORTED_MEDIA}` });
        assert.ok(!result.error_message.includes(samplesDir), result.error_message);
      });
    }

    it('reports the codecs and brand the rule reads, leaving cover art out', async function () {
      // The MP3 sample must really carry a picture, or leaving it out would prove nothing.
      const { stdout } = await promisify(execFile)(resolveFfmpegPaths().ffprobe, [
        ...['-v', 'error', '-select_streams', 'v', '-show_entries', 'stream_disposition=attached_pic', '-of', 'csv=p=0'],
        samples.get('mp3-cover-art') ?? this.skip(),
      ]);
      assert.equal(stdout.trim(), '1');
      const read = async (kind: SampleKind) => {
        const { formatName, brand, audioCodecs, videoCodecs } = await probeSample(this, kind);
        return { formatName, brand, audioCodecs, videoCodecs };
      };
      const iso = 'mov,mp4,m4a,3gp,3g2,mj2';
      assert.deepEqual(await read('mp3-cover-art'), { formatName: 'mp3', brand: undefined, audioCodecs: ['mp3'], videoCodecs: [] });
      assert.deepEqual(await read('m4a-aac'), { formatName: iso, brand: 'M4A', audioCodecs: ['aac'], videoCodecs: [] });
      assert.deepEqual(await read('mov-h264'), { formatName: iso, brand: 'qt', audioCodecs: ['aac'], videoCodecs: ['h264'] });
      assert.deepEqual(await read('mp4-hevc'), { formatName: iso, brand: 'isom', audioCodecs: ['aac'], videoCodecs: ['hevc'] });
      assert.deepEqual(await read('wav'), { formatName: 'wav', brand: undefined, audioCodecs: ['pcm_s16le'], videoCodecs: [] });
    });
  });
});
