import assert from 'node:assert/strict';
import {
  outputFrame,
  planRender,
  renderIdentity,
  type RenderMedia,
  type RenderSource,
  type RenderSpec,
  audioDelay,
} from '../../lib/domain/render-plan';

const hd: RenderSource = { blob: 'd/p/hd', kind: 'video', hasAudio: true, width: 1920, height: 1080, frameRate: 25, rotation: 0 };
const small: RenderSource = { blob: 'd/p/small', kind: 'video', hasAudio: true, width: 640, height: 360, frameRate: 29.97, rotation: 0 };
const voice: RenderSource = { blob: 'd/p/voice', kind: 'audio', hasAudio: true };
const spec = (over: Partial<RenderSpec> = {}): RenderSpec => ({
  clips: [{ media: 'hd', in: 0, out: 10 }],
  media: new Map<string, RenderMedia>([
    ['hd', hd],
    ['small', small],
    ['voice', voice],
  ]),
  mediaType: 'Video',
  frame: { width: 1920, height: 1080 },
  ...over,
});
const plan = (s: RenderSpec) => planRender(s, (blob) => `/data/${blob}`, 'mov,wav', '/out/render.part');
const graphOf = (args: readonly string[]) => args[args.indexOf('-filter_complex') + 1];
/** Each input's seek and length: [-ss, -t] per `-i`. */
const seeks = (args: readonly string[]) =>
  args.flatMap((a, i) => {
    if (a !== '-i') return [];
    const before = args.slice(Math.max(0, i - 6), i);
    const value = (flag: string) => (before.includes(flag) ? before[before.indexOf(flag) + 1] : null);
    return [[args[i + 1], value('-ss'), value('-t')]];
  });

describe('render plan', () => {
  describe('frame', () => {
    it('is the resolution’s short side in the composition’s aspect', () => {
      assert.deepEqual(pick(outputFrame(spec({ resolution: '720p' }), [hd])), [1280, 720, '25']);
      assert.deepEqual(pick(outputFrame(spec({ resolution: '720p', frame: { width: 1080, height: 1920 } }), [hd])), [720, 1280, '25']);
    });

    it('is never larger than the largest source unless upscaling is asked', () => {
      assert.deepEqual(pick(outputFrame(spec({ resolution: '4K' }), [small])), [640, 360, '30000/1001']);
      assert.deepEqual(pick(outputFrame(spec({ resolution: '4K', upscale: true }), [small])), [3840, 2160, '30000/1001']);
      assert.deepEqual(pick(outputFrame(spec({ resolution: '4K' }), [small, hd])), [1920, 1080, '30000/1001']);
    });

    it('reads a quarter-turned source at its shown size', () => {
      const portrait = { ...small, rotation: 90 }; // stored 640x360, shown 360x640
      // In a 16:9 frame a 360x640 picture shows at its size in a 1138x640 frame.
      assert.deepEqual(pick(outputFrame(spec({ resolution: '1080p' }), [portrait])), [1138, 640, '30000/1001']);
    });

    it('keeps the long side of an extreme aspect within 7,680 (a 17x4320 composition made a 334x84622 frame mp4 refuses)', () => {
      const odd: RenderSource = { ...hd, width: 333, height: 201, frameRate: 25 };
      assert.deepEqual(pick(outputFrame(spec({ frame: { width: 17, height: 4320 } }), [odd])), [30, 7680, '25']);
      assert.deepEqual(pick(outputFrame(spec({ frame: { width: 7680, height: 16 } }), [odd])), [7680, 16, '25']);
      assert.deepEqual(pick(outputFrame(spec({ resolution: '4K', upscale: true, frame: { width: 16, height: 9 } }), [odd])), [
        3840,
        2160,
        '25',
      ]);
    });

    it('keeps audio-only compositions at the asked resolution, 30 fps', () => {
      assert.deepEqual(pick(outputFrame(spec({ resolution: '480p', frame: { width: 1, height: 1 } }), [voice])), [480, 480, '30']);
    });
  });

  describe('clips', () => {
    it('seeks each clip exactly, before the input', () => {
      const p = plan(
        spec({
          clips: [
            { media: 'hd', in: 0, out: 2.5 },
            { media: 'small', in: 7.25, out: 9 },
          ],
        }),
      );
      assert.deepEqual(seeks(p.args), [
        ['/data/d/p/hd', null, '2.5'],
        ['/data/d/p/small', '7.25', '1.75'],
      ]);
    });

    it('rounds each clip boundary once in composition time, so many short clips never drift', () => {
      // 100 clips of 0.05 s at 30000/1001 fps: 1.5 frames each; rounded per clip they would make 200 frames.
      const clips = Array.from({ length: 100 }, (_, i) => ({ media: 'small', in: i * 0.1, out: i * 0.1 + 0.05 }));
      const p = plan(spec({ clips }));
      const frames = [...graphOf(p.args).matchAll(/trim=end_frame=(\d+)/g)].map((m) => Number(m[1]));
      assert.equal(
        frames.reduce((a, b) => a + b, 0),
        Math.round((5 * 30000) / 1001),
      );
      assert.ok(Math.abs(p.durationSeconds - 5) <= 1001 / 30000);
    });

    it('scales and pads only pictures that are not already the frame’s size', () => {
      const graph = graphOf(
        plan(
          spec({
            clips: [
              { media: 'hd', in: 0, out: 1 },
              { media: 'small', in: 0, out: 1 },
            ],
          }),
        ).args,
      );
      const [first, second] = graph.split(';').filter((chain) => /\[v\d\]$/.test(chain));
      assert.doesNotMatch(first, /scale=|,pad=/);
      assert.match(second, /scale=1920:1080:force_original_aspect_ratio=decrease,pad=1920:1080:\(ow-iw\)\/2:\(oh-ih\)\/2:black/);
    });

    it('puts an audio-only clip over black in Video and gives a picture-only clip silence', () => {
      const mute: RenderSource = { ...hd, blob: 'd/p/mute', hasAudio: false };
      const s = spec({
        clips: [
          { media: 'voice', in: 0, out: 1 },
          { media: 'mute', in: 0, out: 1 },
        ],
      });
      const graph = graphOf(plan({ ...s, media: new Map([...s.media, ['mute', mute]]) }).args);
      assert.match(graph, /color=c=black:s=1920x1080:r=25,.*\[v0\]/);
      assert.match(graph, /anullsrc=r=48000:cl=stereo,apad,atrim=end_sample=48000,asetpts=PTS-STARTPTS\[a1\]/);
    });

    it('mixes a sequence’s tracks from their offsets: the later one delayed, the earlier one seeked', () => {
      const sequence: RenderMedia = {
        kind: 'sequence',
        tracks: [
          { source: voice, offset: 0 },
          { source: { ...voice, blob: 'd/p/guest' }, offset: 5 },
          { source: { ...voice, blob: 'd/p/late' }, offset: 20 },
        ],
      };
      const s = spec({ clips: [{ media: 'seq', in: 3, out: 8 }], mediaType: 'Audio' });
      const p = plan({ ...s, media: new Map([...s.media, ['seq', sequence]]) });
      // The track starting after the clip ends is not read at all.
      assert.deepEqual(seeks(p.args), [
        ['/data/d/p/voice', '3', '5'],
        ['/data/d/p/guest', null, '3'],
      ]);
      assert.match(graphOf(p.args), /adelay=2000\|2000/);
      assert.match(graphOf(p.args), /amix=inputs=2:duration=longest:dropout_transition=0,volume=2/);
    });
    it('delays a track past 11 hours in stages ffmpeg takes (one adelay overflows at 44,739 s)', () => {
      assert.equal(audioDelay(2), 'adelay=2000|2000');
      assert.equal(audioDelay(0), 'adelay=0|0');
      assert.equal(audioDelay(45_000), 'adelay=40000000|40000000,adelay=5000000|5000000');
      assert.equal(audioDelay(86_400), 'adelay=40000000|40000000,adelay=40000000|40000000,adelay=6400000|6400000');
      // What ffmpeg itself says of such a chain is tested with a real run in test/integration/renderer.test.ts.
    });
    it('shows a sequence’s first video track, black until it starts, and opens a silent second camera not at all', () => {
      const mute = (blob: string): RenderSource => ({ ...hd, blob, hasAudio: false });
      const sequence: RenderMedia = {
        kind: 'sequence',
        tracks: [
          { source: voice, offset: 0 },
          { source: mute('d/p/cam1'), offset: 1 },
          { source: mute('d/p/cam2'), offset: 0 },
        ],
      };
      const s = spec({ clips: [{ media: 'seq', in: 0, out: 4 }] });
      const p = plan({ ...s, media: new Map([...s.media, ['seq', sequence]]) });
      assert.deepEqual(
        seeks(p.args).map(([path]) => path),
        ['/data/d/p/voice', '/data/d/p/cam1'],
      );
      assert.match(
        graphOf(p.args),
        /\[1:v:0\]setpts=PTS-STARTPTS,setsar=1,format=yuv420p,fps=25,tpad=start_duration=1:start_mode=add:color=black,/,
      );
    });
  });

  describe('output', () => {
    it('writes MP4 H.264/AAC with faststart for Video, M4A/AAC without picture for Audio', () => {
      const video = plan(spec());
      assert.deepEqual(tail(video.args, '-movflags'), ['+faststart', '-f', 'mp4', '-y', '/out/render.part']);
      assert.ok(video.args.includes('libx264') && video.args.includes('aac'));
      const audio = plan(spec({ mediaType: 'Audio' }));
      assert.ok(!audio.args.includes('libx264') && !audio.args.includes('[v]'));
      assert.deepEqual(tail(audio.args, '-movflags'), ['+faststart', '-f', 'ipod', '-y', '/out/render.part']);
      assert.equal(audio.width, undefined);
    });

    it('applies the loudness target and noise reduction only when set', () => {
      assert.match(graphOf(plan(spec()).args), /\[joined\]anull\[a\]$/);
      const graph = graphOf(plan(spec({ audio: { loudness_lufs: -16, noise_reduction: true } })).args);
      assert.match(graph, /\[joined\]afftdn=nf=-25,loudnorm=I=-16:TP=-1.5:LRA=11,aresample=48000\[a\]$/);
    });

    it('reads inputs as files of whitelisted formats only', () => {
      const p = plan(
        spec({
          clips: [
            { media: 'hd', in: 0, out: 1 },
            { media: 'voice', in: 0, out: 1 },
          ],
        }),
      );
      assert.deepEqual(tail(p.args, '-protocol_whitelist').slice(0, 1), ['file']);
      assert.equal(p.args.filter((a) => a === '-format_whitelist').length, 2);
    });

    it('refuses a clip whose media it was not given', () => {
      assert.throws(() => plan(spec({ clips: [{ media: 'gone', in: 0, out: 1 }] })), /"gone"/);
    });
  });

  describe('identity (the render cache key)', () => {
    it('does not depend on the order the caller built objects in', () => {
      const reordered: RenderSource = {
        rotation: 0,
        frameRate: 25,
        height: 1080,
        width: 1920,
        hasAudio: true,
        kind: 'video',
        blob: 'd/p/hd',
      };
      const s = spec();
      assert.equal(renderIdentity(s), renderIdentity({ ...s, media: new Map([['hd', reordered]]) }));
    });

    it('changes with the clips, a source blob, the settings, and not with media the clips do not use', () => {
      const base = renderIdentity(spec());
      const s = spec();
      assert.notEqual(renderIdentity(spec({ clips: [{ media: 'hd', in: 0, out: 9.999 }] })), base);
      assert.notEqual(renderIdentity({ ...s, media: new Map([['hd', { ...hd, blob: 'd/p/other' }]]) }), base);
      assert.notEqual(renderIdentity(spec({ resolution: '720p' })), base);
      assert.notEqual(renderIdentity(spec({ audio: { loudness_lufs: -16 } })), base);
      assert.notEqual(renderIdentity(spec({ mediaType: 'Audio' })), base);
      assert.equal(renderIdentity({ ...s, media: new Map([['hd', hd]]) }), base);
    });
  });
});

const pick = (f: { width: number; height: number; rateText: string }) => [f.width, f.height, f.rateText];
const tail = (args: readonly string[], from: string) => args.slice(args.indexOf(from) + 1);
