import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../lib/adapters/ffmpeg/binaries';
import { createFfmpegRenderer } from '../lib/adapters/ffmpeg/renderer';
import type { RenderSpec } from '../lib/domain/render-plan';

/**
 * (i) Render time (issue 21): a 60 s 1080p composition of three clips from two sources with two
 * cuts, rendered by the service's Renderer, against one hand-written ffmpeg command that makes
 * the same output (the same clips, H.264 veryfast CRF 20 and AAC 192k, faststart) in the same run.
 * The two take turns (hand-written, service, …) BENCH_RENDER_ROUNDS times (2) and the ratio is of
 * their total times, as the VM's speed drifts within minutes. `npx tsx bench/render.ts` runs it alone.
 */

const run = promisify(execFile);
export type RenderFigures = { serviceSeconds: number; handSeconds: number; ratio: number; rounds: number };
export const RENDER_GOAL = 1.15;

/** Two 1080p25 sources with stereo sound at 48 kHz: 45 s and 30 s. */
async function makeSources(ffmpeg: string, dir: string): Promise<void> {
  const source = (seconds: number, hz: number, out: string) =>
    run(
      ffmpeg,
      [
        ...['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'],
        ...['-f', 'lavfi', '-i', `testsrc2=size=1920x1080:rate=25:duration=${seconds}`],
        ...['-f', 'lavfi', '-i', `sine=frequency=${hz}:sample_rate=48000:duration=${seconds}`],
        ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '50', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-ac', '2', join(dir, out)],
      ],
      { timeout: 600_000 },
    );
  await source(45, 440, 'a.mp4');
  await source(30, 660, 'b.mp4');
}

/** A[0,20) A[25,45) B[5,25): cuts at A 20–25 and B 0–5. */
const CLIPS = [
  { media: 'a', in: 0, out: 20 },
  { media: 'a', in: 25, out: 45 },
  { media: 'b', in: 5, out: 25 },
];

function handWritten(dir: string, out: string): string[] {
  const inputs = CLIPS.flatMap((c) => ['-ss', String(c.in), '-t', String(c.out - c.in), '-i', join(dir, `${c.media}.mp4`)]);
  return [
    ...['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...inputs],
    ...['-filter_complex', '[0:v][0:a][1:v][1:a][2:v][2:a]concat=n=3:v=1:a=1[v][a]', '-map', '[v]', '-map', '[a]'],
    ...['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '192k'],
    ...['-movflags', '+faststart', out],
  ];
}

const seconds = async (work: () => Promise<unknown>): Promise<number> => {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e9;
};

export async function measureRender(rounds = Math.max(1, Number(process.env.BENCH_RENDER_ROUNDS ?? 2))): Promise<RenderFigures> {
  const { ffmpeg } = resolveFfmpegPaths();
  const dir = mkdtempSync(join(tmpdir(), 'bench-render-'));
  try {
    await makeSources(ffmpeg, dir);
    const renderer = createFfmpegRenderer({ ffmpegPath: ffmpeg, blobs: { localPath: (key) => join(dir, `${key}.mp4`) } });
    const spec: RenderSpec = {
      clips: CLIPS,
      media: new Map(
        ['a', 'b'].map((ref) => [ref, { blob: ref, kind: 'video', hasAudio: true, width: 1920, height: 1080, frameRate: 25, rotation: 0 }]),
      ),
      mediaType: 'Video',
      frame: { width: 1920, height: 1080 },
      resolution: '1080p',
    };
    let handSeconds = 0;
    let serviceSeconds = 0;
    for (let i = 0; i < rounds; i++) {
      handSeconds += await seconds(() => run(ffmpeg, handWritten(dir, join(dir, 'hand.mp4')), { timeout: 1_800_000 }));
      serviceSeconds += await seconds(() => renderer.render(spec, join(dir, 'service.mp4')));
    }
    return { serviceSeconds: serviceSeconds / rounds, handSeconds: handSeconds / rounds, ratio: serviceSeconds / handSeconds, rounds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const renderRows = (g: RenderFigures) => [
  { figure: '(i) 60 s 1080p, 3 clips, 2 cuts: one ffmpeg command (baseline)', value: `${g.handSeconds.toFixed(1)} s` },
  {
    figure: '(i) the same composition through the Renderer',
    value: `${g.serviceSeconds.toFixed(1)} s`,
    ratio: g.ratio.toFixed(2),
    goal: `<= ${RENDER_GOAL}`,
    met: g.ratio <= RENDER_GOAL,
  },
];

if (require.main === module) {
  void measureRender().then((g) => {
    for (const row of renderRows(g))
      console.log(`${row.figure}: ${row.value}${row.ratio ? ` (ratio ${row.ratio}, goal ${row.goal})` : ''}`);
  });
}
