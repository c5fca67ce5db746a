import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestMedia } from '../test/fixtures/media';
import { startMediaServer } from '../test/fixtures/media-server';
import { openSse } from '../test/fixtures/sse';
import { startServe } from './engine';
import { admin, build, stop, type Started } from './processes';

/**
 * (m) Live job events as users run them (`npm start`): BENCH_SSE_JOBS imports of a 1 s WAV,
 * BENCH_SSE_CONCURRENCY at a time. Each job is watched two ways at once from its creation: an SSE
 * stream (`GET /v1/jobs/{id}/events`) and a client polling `GET /v1/jobs/{id}` every second, as
 * clients did before. The figure is the delay from the job's `stopped_at` (the worker's clock,
 * the same machine's) to each client seeing the stopped document. Goal (issue 23): SSE p99 under
 * 100 ms.
 */

const JOBS = Math.max(1, Number(process.env.BENCH_SSE_JOBS ?? 200));
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_SSE_CONCURRENCY ?? 8));
const POLL_MS = 1000;

export type JobEventsFigures = { jobs: number; sse: Percentiles; polling: Percentiles };
type Percentiles = { p50: number; p99: number; max: number };

const percentiles = (xs: number[]): Percentiles => {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] };
};

/** Wall-clock now in ms with sub-millisecond precision (stopped_at is the wall clock). */
const wallNow = () => performance.timeOrigin + performance.now();

export async function measureJobEvents(): Promise<JobEventsFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-sse-'));
  const media = await startMediaServer({ 'talk.wav': await makeTestMedia(dir, 'wav', 1) });
  // The polling clients alone make about 8 requests a second: the default 600 a minute per token would refuse them.
  const env = {
    DATA_DIR: join(dir, 'data'),
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    TRANSCRIBER: 'none',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000000',
  };
  let serve: Started | undefined;
  try {
    await build();
    serve = await startServe(env, join(dir, 'serve.log'));
    const { token } = await admin(env, 'drive', 'create', '--name', 'bench-sse', '--media-seconds', '36000');
    const auth = { authorization: `Bearer ${token}` };
    const base = `${serve.url}/v1`;

    const viaSse = async (jobId: string): Promise<number> => {
      const stream = await openSse(`${base}/jobs/${jobId}/events`, auth);
      if (stream.status !== 200) throw new Error(`events answered ${stream.status}: ${JSON.stringify(stream.body)}`);
      const events = await stream.rest();
      const last = events[events.length - 1];
      const job = JSON.parse(last.data) as { job_state: string; stopped_at: string };
      if (job.job_state !== 'stopped') throw new Error(`the stream ended on ${job.job_state}`);
      return performance.timeOrigin + last.at - Date.parse(job.stopped_at);
    };
    const viaPolling = async (jobId: string): Promise<number> => {
      for (;;) {
        const res = await fetch(`${base}/jobs/${jobId}`, { headers: auth });
        if (res.status !== 200) throw new Error(`GET answered ${res.status}: ${await res.text()}`);
        const job = (await res.json()) as { job_state: string; stopped_at: string };
        if (job.job_state === 'stopped') return wallNow() - Date.parse(job.stopped_at);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    };
    const sse: number[] = [];
    const polling: number[] = [];
    let next = 0;
    const lane = async () => {
      while (next < JOBS) {
        const i = next++;
        const res = await fetch(`${base}/jobs/import/project_media`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ project_name: `SSE ${i}`, add_media: { 'talk.wav': { url: media.url('file', 'talk.wav') } } }),
        });
        if (res.status !== 201) throw new Error(`import answered ${res.status}: ${await res.text()}`);
        const { job_id } = (await res.json()) as { job_id: string };
        const [s, p] = await Promise.all([viaSse(job_id), viaPolling(job_id)]);
        sse.push(s);
        polling.push(p);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    return { jobs: JOBS, sse: percentiles(sse), polling: percentiles(polling) };
  } finally {
    await stop(serve);
    await media.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  measureJobEvents().then(
    (f) => console.log(JSON.stringify(f)),
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
