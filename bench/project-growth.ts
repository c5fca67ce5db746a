import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../lib/adapters/ffmpeg/binaries';
import { startServe } from './engine';
import { admin, build, stop, type Started } from './processes';
/**
 * One project growing (`npx tsx bench/project-growth.ts`, by hand; not a phase of `npm run bench`):
 * `npm start` on the embedded defaults, and BENCH_GROWTH_FILES (8,000) one-second WAVs imported
 * into one project by URL (a media server in its own process), 20 requests at a time, in waves of
 * BENCH_GROWTH_WAVE (500), each waited for until every job reads stopped. Per wave: imports
 * finished per second, and the `projects` read model's mean projection lag over the wave (from
 * /metrics). Until 2026-11-28 the projector read and wrote the project's whole document, every
 * file in it, for each batch that touched the project, so the lag grew with the project (10 ms at
 * 500 files, 260–310 ms at 7,000); each file is now a document of its own, and the lag stays at
 * 4–7 ms up to 8,000 files (docs/decisions.md, "Session of 28 November").
 */

const exec = promisify(execFile);
const TOTAL = Number(process.env.BENCH_GROWTH_FILES ?? 8000);
const WAVE = Number(process.env.BENCH_GROWTH_WAVE ?? 500);
async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-growth-'));
  const wav = join(dir, 'one.wav');
  await exec(resolveFfmpegPaths().ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', '-ar', '16000', wav]);
  const media = spawn(
    process.execPath,
    [
      '-e',
      `
const http = require('node:http'); const fs = require('node:fs'); const file = fs.readFileSync(process.argv[1]);
const s = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': file.length }); res.end(file); });
s.listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port) + '\\n'));`,
      wav,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const mediaPort = await new Promise<string>((r) => media.stdout!.once('data', (d) => r(String(d).trim())));
  const env = {
    DATA_DIR: join(dir, 'data'),
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
    TRANSCRIBER: 'none',
  };
  let serve: Started | undefined;
  try {
    await build();
    serve = await startServe(env, join(dir, 'serve.log'));
    const { token } = await admin(env, 'drive', 'create', '--name', 'growth');
    const call = async (path: string, body?: unknown) => {
      const r = await fetch(`${serve!.url}/v1${path}`, {
        method: body ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await r.text();
      if (!r.ok) throw new Error(`${path}: ${r.status} ${text.slice(0, 300)}`);
      return JSON.parse(text) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    };
    const metricsLag = async () => {
      const text = await (await fetch(`${serve!.url}/metrics`)).text();
      const m = /projection_lag_seconds_sum\{read_model="projects"\} ([0-9.e+-]+)/.exec(text);
      const c = /projection_lag_seconds_count\{read_model="projects"\} ([0-9.e+-]+)/.exec(text);
      return m && c ? { sum: Number(m[1]), count: Number(c[1]) } : { sum: 0, count: 0 };
    };
    const url = `http://127.0.0.1:${mediaPort}/one.wav`;
    const first = await call('/jobs/import/project_media', { project_name: 'big', add_media: { 'f0.wav': { url } } });
    const projectId = first.project_id as string;
    const waitStopped = async (ids: string[]) => {
      for (const id of ids)
        for (;;) {
          const j = await call(`/jobs/${id}`);
          if (j.job_state === 'stopped') {
            if (j.result?.status !== 'success') throw new Error(JSON.stringify(j.result));
            break;
          }
          await new Promise((r) => setTimeout(r, 20));
        }
    };
    await waitStopped([first.job_id]);
    for (let done = 1; done < TOTAL; done += WAVE) {
      const lag0 = await metricsLag();
      const t = process.hrtime.bigint();
      const ids: string[] = [];
      for (let i = done; i < Math.min(TOTAL, done + WAVE); i += 20) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(20, TOTAL - i, done + WAVE - i) }, (_, k) =>
            call('/jobs/import/project_media', { project_id: projectId, add_media: { [`f${i + k}.wav`]: { url } } }),
          ),
        );
        ids.push(...batch.map((b) => b.job_id as string));
      }
      await waitStopped(ids);
      const all = Number(process.hrtime.bigint() - t) / 1e6;
      const lag1 = await metricsLag();
      const meanLag = (lag1.sum - lag0.sum) / Math.max(1, lag1.count - lag0.count);
      console.log(
        `media ${done + ids.length}: ${((ids.length / all) * 1000).toFixed(1)} imports/s; projects lag mean ${(meanLag * 1000).toFixed(0)} ms`,
      );
    }
  } finally {
    await stop(serve);
    media.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
