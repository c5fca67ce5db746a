import { execFile } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../lib/adapters/ffmpeg/binaries';
import { startServe } from './engine';
import { admin, build, stop, type Started } from './processes';
import { median } from './stats';

/**
 * (l) Publishing as users run it (`npm start`, the job processed by the worker): a 10 s 720p
 * video is imported, published once (a real render), then published again unchanged
 * BENCH_REPUBLISH_ROUNDS times. Each republish is timed from the POST to the client reading
 * `stopped` (polling every 10 ms), and by the job's own `created_at` → `stopped_at`. The goal
 * (issue 21): an unchanged republish stops in under a second; the first publish's time is shown
 * beside it as the render it saves.
 */

const exec = promisify(execFile);
const ROUNDS = Math.max(1, Number(process.env.BENCH_REPUBLISH_ROUNDS ?? 7));

export type RepublishFigures = { firstMs: number; republishMs: number; republishJobMs: number; rounds: number };

type JobBody = {
  job_id: string;
  project_id: string;
  job_state?: string;
  created_at: string;
  stopped_at: string;
  result?: { status: string };
};

async function serveFile(path: string) {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': statSync(path).size });
    createReadStream(path).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/clip.mp4`, close: () => server.close() };
}

export async function measureRepublish(): Promise<RepublishFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-republish-'));
  const clip = join(dir, 'clip.mp4');
  await exec(resolveFfmpegPaths().ffmpeg, [
    ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=30:duration=10'],
    ...[
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=10',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-c:a',
      'aac',
      clip,
    ],
  ]);
  const media = await serveFile(clip);
  const env = { DATA_DIR: join(dir, 'data'), OUTBOUND_ALLOWLIST: '127.0.0.1', TRANSCRIBER: 'none', LOG_LEVEL: 'warn' };
  let serve: Started | undefined;
  try {
    await build();
    serve = await startServe(env, join(dir, 'serve.log'));
    const { token } = await admin(env, 'drive', 'create', '--name', 'bench-republish');
    const api = (path: string, body?: unknown) =>
      fetch(`${serve!.url}/v1${path}`, {
        method: body ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as JobBody }));
    const waitStopped = async (jobId: string) => {
      for (;;) {
        const { body } = await api(`/jobs/${jobId}`);
        if (body.job_state === 'stopped' || body.job_state === 'cancelled') return body;
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const imported = await api('/jobs/import/project_media', {
      project_name: 'Bench republish',
      add_media: { 'clip.mp4': { url: media.url } },
      add_compositions: [{ name: 'Main', clips: [{ media: 'clip.mp4' }] }],
    });
    if (imported.status !== 201) throw new Error(`import answered ${imported.status}: ${JSON.stringify(imported.body)}`);
    const job = await waitStopped(imported.body.job_id);
    if (job.result?.status !== 'success') throw new Error(`the import ended ${JSON.stringify(job.result)}`);
    const publish = async () => {
      const start = process.hrtime.bigint();
      const res = await api('/jobs/publish', { project_id: imported.body.project_id });
      if (res.status !== 201) throw new Error(`publish answered ${res.status}: ${JSON.stringify(res.body)}`);
      const done = await waitStopped(res.body.job_id);
      if (done.result?.status !== 'success') throw new Error(`the publish ended ${JSON.stringify(done.result)}`);
      return { ms: Number(process.hrtime.bigint() - start) / 1e6, jobMs: Date.parse(done.stopped_at) - Date.parse(done.created_at) };
    };
    const first = await publish();
    const again: { ms: number; jobMs: number }[] = [];
    for (let i = 0; i < ROUNDS; i++) again.push(await publish());
    return {
      firstMs: first.ms,
      republishMs: median(again.map((a) => a.ms)),
      republishJobMs: median(again.map((a) => a.jobMs)),
      rounds: ROUNDS,
    };
  } finally {
    await stop(serve);
    media.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  measureRepublish().then(
    (f) => console.log(JSON.stringify(f)),
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
