import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../lib/adapters/ffmpeg/binaries';
import { compare, type LoadResult } from './load';
import { admin, freePort, SERVICE_ROOT, startBaseline, stop, type Started } from './processes';

/**
 * (f) The engine as users run it: `npm start` (dist/bin/serve.js: the APIs, and the worker with
 * processors and projector), every job really processed (a 3 s WAV from a media server on
 * loopback, in its own process). Figures:
 * - stale reads: DELETE→GET pairs and stopped→project reads, while another drive's client
 *   accepts imports at a steady rate (BENCH_BUSY_RATE, 200/s);
 * - projection lag p50 and p99 per read model, from the service's own /metrics histogram;
 * - overdraw: runs of 200 concurrent imports on a 150-second balance (BENCH_OVERDRAW_RUNS);
 * - imports finished per second, end to end, against ffprobe of the same file two at a time;
 * - accept with the processors saturated (by the steady load's backlog), against bare Koa, in turns.
 * The imports/s and overdraw figures run first: the steady load accepts faster than the
 * processors finish, and its backlog would starve them.
 */

const exec = promisify(execFile);
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

export type EngineFigures = {
  pairs: number;
  staleAfterDelete: number;
  stops: number;
  staleAfterStop: number;
  lag: Record<string, { p50: number; p99: number }>;
  /** Events per batch the projector applied under the same load, on average (NaN: none reported). */
  projectorBatch: number;
  overdraw: { runs: number; overdrawn: number; mismatched: number; maxUsed: number };
  imports: {
    count: number;
    /** Turns of `count` imports and `count` ffprobe runs; rates and CPU are over all of them. */
    rounds: number;
    perSecond: number;
    cpuPerImport: number;
    cpuPerImportByProcess: Record<string, number>;
    /** The first `count` imports of the fresh service. */
    cold: { perSecond: number; cpuPerImport: number };
    ffprobePerSecond: number;
    ffprobeCpu: number;
  };
  /** `waits`: where an accepted request's time went meanwhile (see `waitsOf`). */
  accept: { service: LoadResult; bare: LoadResult; waits: AcceptWaits };
};

const MEDIA_SERVER = `
const http = require('node:http'); const fs = require('node:fs');
const file = fs.readFileSync(process.argv[1]);
const server = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': file.length }); res.end(file); });
server.keepAliveTimeout = 30000;
server.listen(0, '127.0.0.1', () => process.stdout.write('ready ' + server.address().port + '\\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

export async function measureEngine(options: { connections: number; warmupSeconds: number; seconds: number; rounds: number }) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-engine-'));
  const started: Started[] = [];
  try {
    const wav = join(dir, 'three.wav');
    await exec(resolveFfmpegPaths().ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=3', '-ar', '16000', wav]);
    const media = await startChild('media server', ['-e', MEDIA_SERVER, wav]);
    started.push(media);
    // No admission limit: the steady load offers 200 imports/s from one drive, about three times
    // what is finished, and the accept figure posts flat out; a backlog cap would turn part away.
    const env = {
      DATA_DIR: join(dir, 'data'),
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      RATE_LIMIT_PER_MINUTE: '1000000000',
      MAX_UNFINISHED_JOBS_PER_DRIVE: '0',
      LOG_LEVEL: 'warn',
    };
    const svc = await startServe(env, join(dir, 'serve.log'));
    started.push(svc);
    const api = client(svc.url);
    const importBody = (name: string) => ({ project_name: name, add_media: { 'three.wav': { url: `${media.url}/three.wav` } } });

    const imports = await importsPerSecond(api, env, importBody, wav, svc.child.pid!);
    // Before the steady load: the backlog it leaves (it accepts faster than the processors finish)
    // would otherwise starve these runs.
    const overdraw = await overdrawRuns(api, env, num('BENCH_OVERDRAW_RUNS', 20), importBody);
    const busy = await admin(env, 'drive', 'create', '--name', 'Busy');
    // The lag under the steady load alone (the figure's definition): the histogram's counts from
    // here to its end, not those of the bursts of 200 and 300 concurrent imports before it.
    const lagBefore = await (await fetch(`${svc.url}/metrics`)).text();
    const stopBusy = steadyLoad(api(busy.token), num('BENCH_BUSY_RATE', 200), (i) => importBody(`Busy ${i}`));
    const me = await admin(env, 'drive', 'create', '--name', 'Reader');
    const [pairs, stops] = await Promise.all([
      deleteThenGet(api(me.token), num('BENCH_RYW_PAIRS', 1000)),
      stoppedThenProject(api(me.token), num('BENCH_RYW_STOPS', 1000), importBody),
    ]);
    await stopBusy();
    const lagAfter = await (await fetch(`${svc.url}/metrics`)).text();
    const lag = lagOf(lagAfter, lagBefore);
    const projectorBatch = meanOf('projector_batch_events', lagBefore, lagAfter);

    const bare = await startBaseline();
    started.push(bare);
    const acceptDrive = await admin(env, 'drive', 'create', '--name', 'Accept');
    const body = JSON.stringify(importBody('Accept'));
    const post = { ...options, method: 'POST' as const, expect: 201, body, headers: { authorization: `Bearer ${acceptDrive.token}` } };
    // Scraped around the phase: the event loop delay's percentiles start again at each scrape.
    const metricsBefore = await (await fetch(`${svc.url}/metrics`)).text();
    const [bareResult, serviceResult] = await compare(
      [
        { ...post, url: `${bare.url}/post` },
        { ...post, url: `${svc.url}/v1/jobs/import/project_media` },
      ],
      options.rounds,
    );
    const acceptWaits = waitsOf(metricsBefore, await (await fetch(`${svc.url}/metrics`)).text());
    return {
      ...pairs,
      ...stops,
      lag,
      projectorBatch,
      overdraw,
      imports,
      accept: { service: serviceResult, bare: bareResult, waits: acceptWaits },
    } satisfies EngineFigures;
  } finally {
    for (const s of started.reverse()) await stop(s);
    if (process.env.BENCH_KEEP_DATA) console.log(`\nkept (f)'s data in ${dir} (BENCH_KEEP_DATA)`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

type Api = ReturnType<ReturnType<typeof client>>;

/** The fields of the API's answers this load client reads (jobs, imports, projects). */
type Answer = {
  readonly job_id: string;
  readonly project_id: string;
  readonly job_state?: string;
  readonly stopped_at?: string;
  readonly result?: { readonly media_seconds_used?: number; readonly media_status?: Record<string, { readonly status: string }> };
  readonly media_files?: Record<string, { readonly type: string }>;
};

const client = (base: string) => (token: string) => {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const json = async (res: Response) => (await res.json()) as Answer;
  return {
    post: async (path: string, body: unknown) =>
      json(await fetch(`${base}/v1${path}`, { method: 'POST', headers, body: JSON.stringify(body) })),
    get: async (path: string) => json(await fetch(`${base}/v1${path}`, { headers })),
    delete: async (path: string) => (await fetch(`${base}/v1${path}`, { method: 'DELETE', headers })).status,
  };
};

/**
 * Polls the job until it ends: every 20 ms where the moment matters (a read right after the stop),
 * else every 500 ms, as a client waiting for many jobs would (polling 300 jobs every 20 ms is
 * 15,000 reads a second: the bench measured its own polling).
 */
/**
 * Waits for jobs in the order they were accepted, polling only the oldest not yet stopped: one
 * drive's jobs start in that order, so each later one is mostly found stopped at its first read.
 * Polling all 300 every 500 ms took a sixth of the two cores from the service it measures (perf:
 * the bench's own fetches, and `serve` answering them), the cost of the measurement, not of an import.
 */
async function inTurn(api: Api, jobs: readonly string[]): Promise<Answer[]> {
  const done: Answer[] = [];
  for (const id of jobs) done.push(await untilStopped(api, id, 100));
  return done;
}

async function untilStopped(api: Api, jobId: string, everyMs = 500): Promise<Answer> {
  for (;;) {
    const job = await api.get(`/jobs/${jobId}`);
    if (job.job_state === 'stopped' || job.job_state === 'cancelled') return job;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * 300 one-file imports of a 3 s WAV, from the first POST to the last `stopped_at` (the jobs' own
 * record, so the polling interval does not stretch it), against ffprobe of the file two at a
 * time. Also the CPU time each costs: the service's whole process tree (serve, its workers and
 * their ffprobe children) per import, against ffprobe's own per call, which other load on the
 * machine does not move the way it moves wall-clock rates. Imports and ffprobe take turns
 * (BENCH_IMPORT_ROUNDS, 2, of each), so that the machine's drift over the phase (this VM's speed
 * moves by a fifth within minutes) falls on both sides; rates are the rounds' totals.
 */
async function importsPerSecond(
  api: (token: string) => Api,
  env: Record<string, string>,
  body: (n: string) => unknown,
  wav: string,
  servePid: number,
) {
  const count = num('BENCH_IMPORTS', 300);
  const rounds = Math.max(1, num('BENCH_IMPORT_ROUNDS', 2));
  /** `n` imports of a new drive at once, from the first POST to the last `stopped_at`, and the service's CPU. */
  const burst = async (n: number, name: string) => {
    const a = api((await admin(env, 'drive', 'create', '--name', name)).token);
    const cpu0 = treeCpuByProcess(servePid);
    const t0 = Date.now();
    const jobs = await Promise.all(
      Array.from({ length: n }, async (_, i) => (await a.post('/jobs/import/project_media', body(`${name} ${i}`))).job_id as string),
    );
    const done = await inTurn(a, jobs);
    const last = Math.max(...done.map((j) => Date.parse(j.stopped_at ?? '')));
    const byProcess = new Map([...treeCpuByProcess(servePid)].map(([p, cpu]) => [p, cpu - (cpu0.get(p) ?? 0)]));
    return { seconds: (last - t0) / 1000, cpu: [...byProcess.values()].reduce((x, y) => x + y, 0), byProcess };
  };
  const ffprobe = resolveFfmpegPaths().ffprobe;
  /** `n` runs of ffprobe on the file, two at a time, and their CPU. */
  const probes = async (n: number) => {
    const t1 = performance.now();
    childCpuSeconds(); // from here on
    let next = 0;
    await Promise.all(
      [0, 1].map(async () => {
        while (next++ < n) await exec(ffprobe, ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', wav]);
      }),
    );
    return { seconds: (performance.now() - t1) / 1000, cpu: childCpuSeconds() };
  };
  // The figure is the warm service's, as the HTTP figures measure after a warm-up. A fresh one
  // spends a tenth of its CPU over the first thousand or so imports in V8's optimizing compiler
  // (perf: its threads in the jobs worker, still busy after 300 imports); the cold burst is shown.
  const cold = await burst(count, 'Cold');
  await burst(num('BENCH_IMPORT_WARMUP', 600), 'Warm-up');
  const warm = { seconds: 0, cpu: 0 };
  const probed = { seconds: 0, cpu: 0 };
  const byProcess = new Map<string, number>();
  for (let round = 0; round < rounds; round++) {
    const b = await burst(count, `Imports ${round}`);
    for (const [p, cpu] of b.byProcess) byProcess.set(p, (byProcess.get(p) ?? 0) + cpu);
    const p = await probes(count);
    for (const [into, from] of [
      [warm, b],
      [probed, p],
    ] as const) {
      into.seconds += from.seconds;
      into.cpu += from.cpu;
    }
  }
  const total = count * rounds;
  return {
    count,
    rounds,
    perSecond: total / warm.seconds,
    cpuPerImport: warm.cpu / total,
    /** By process (see `treeCpuByProcess`), those that used any. */
    cpuPerImportByProcess: Object.fromEntries([...byProcess].filter(([, cpu]) => cpu > 0).map(([p, cpu]) => [p, cpu / total])),
    cold: { perSecond: count / cold.seconds, cpuPerImport: cold.cpu / count },
    ffprobePerSecond: total / probed.seconds,
    ffprobeCpu: probed.cpu / total,
  };
}

const TICKS = 100; // USER_HZ on Linux

/**
 * CPU seconds of a process and every live descendant, each with what its reaped children used,
 * by process: `serve` (the root), its workers by role (`projector`, `jobs`: the last
 * argument `bin/serve.ts` starts them with), anything else by program name; what a process's
 * reaped children used (the jobs worker's ffprobe runs) under `<name> children`.
 */
function treeCpuByProcess(root: number): Map<string, number> {
  const stats = new Map<number, { ppid: number; own: number; reaped: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const text = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14)
      stats.set(Number(name), { ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) });
    } catch {
      // the process ended meanwhile
    }
  }
  const inTree = (pid: number): boolean => pid === root || (pid > 1 && stats.has(pid) && inTree(stats.get(pid)!.ppid));
  const byName = new Map<string, number>();
  const add = (name: string, ticks: number) => byName.set(name, (byName.get(name) ?? 0) + ticks / TICKS);
  for (const [pid, s] of stats) {
    if (!inTree(pid)) continue;
    const name = pid === root ? 'serve' : processName(pid);
    add(name, s.own);
    add(`${name} children`, s.reaped);
  }
  return byName;
}

function processName(pid: number): string {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const last = args[args.length - 1] ?? '';
    if (last === 'projector' || last === 'jobs') return last;
    return basename(args[0] ?? String(pid));
  } catch {
    return String(pid);
  }
}

let childCpuSeen = 0;
/** CPU seconds this process's reaped children used since the last call. */
function childCpuSeconds(): number {
  const text = readFileSync('/proc/self/stat', 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const now = (Number(f[13]) + Number(f[14])) / TICKS;
  const used = now - childCpuSeen;
  childCpuSeen = now;
  return used;
}

/** Imports at `perSecond`, fire and forget, until stopped. */
function steadyLoad(api: Api, perSecond: number, body: (i: number) => unknown) {
  let i = 0;
  const timer = setInterval(() => {
    for (let k = 0; k < perSecond / 20; k++) void api.post('/jobs/import/project_media', body(i++)).catch(() => undefined);
  }, 50);
  return async () => clearInterval(timer);
}

async function deleteThenGet(api: Api, pairs: number) {
  let stale = 0;
  for (let i = 0; i < pairs; i++) {
    const { job_id } = await api.post('/jobs/import/project_media', {
      project_name: `Waiting ${i}`,
      add_media: { 'later.wav': { content_type: 'audio/wav', file_size: 1000 } },
    });
    await api.delete(`/jobs/${job_id}`);
    if ((await api.get(`/jobs/${job_id}`)).job_state !== 'cancelled') stale++;
  }
  return { pairs, staleAfterDelete: stale };
}

/** Jobs polled by 20 clients until stopped; each stop followed at once by a read of its project. */
async function stoppedThenProject(api: Api, stops: number, body: (n: string) => unknown) {
  let stale = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next++ < stops) {
        const { job_id, project_id } = await api.post('/jobs/import/project_media', body(`Stopped ${next}`));
        const job = await untilStopped(api, job_id, 20);
        const project = await api.get(`/projects/${project_id}`);
        const imported = job.result?.media_status?.['three.wav']?.status === 'success';
        if (imported && project.media_files?.['three.wav']?.type !== 'audio') stale++;
      }
    }),
  );
  return { stops, staleAfterStop: stale };
}

async function overdrawRuns(api: (token: string) => Api, env: Record<string, string>, runs: number, body: (n: string) => unknown) {
  let overdrawn = 0;
  let mismatched = 0;
  let maxUsed = 0;
  for (let run = 0; run < runs; run++) {
    const drive = await admin(env, 'drive', 'create', '--name', `Overdraw ${run}`, '--media-seconds', '150');
    const a = api(drive.token);
    const jobs = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => (await a.post('/jobs/import/project_media', body(`O ${i}`))).job_id),
    );
    const done = await Promise.all(jobs.map((id: string) => untilStopped(a, id)));
    const used = done.reduce((n, j) => n + (j.result?.media_seconds_used ?? 0), 0);
    const shown = (await admin(env, 'drive', 'show', '--drive', drive.drive_id)) as unknown as {
      balances: { media_seconds: Record<string, number> };
    };
    const b = shown.balances.media_seconds;
    if (b.left < 0 || used > 150 + 1e-6) overdrawn++;
    if (Math.abs(b.used - used) > 1e-6 || b.reserved !== 0) mismatched++;
    maxUsed = Math.max(maxUsed, used);
  }
  return { runs, overdrawn, mismatched, maxUsed };
}

/** The mean of a histogram's observations between two scrapes (its `_sum` and `_count` without labels). */
function meanOf(name: string, before: string, after: string): number {
  const value = (text: string, suffix: string) => Number(new RegExp(`^${name}_${suffix} ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN);
  return (value(after, 'sum') - (value(before, 'sum') || 0)) / (value(after, 'count') - (value(before, 'count') || 0));
}

/**
 * What the accept path waits on, between two scrapes of `serve`'s /metrics: the p99 of an
 * append's wait for its commit (`event_store_append_seconds`, outcome ok: the upper bound of its
 * bucket) and of the event loop's delay in each process that reports one (prom-client's
 * `nodejs_eventloop_lag_p99_seconds`, measured since the scrape before).
 */
export type AcceptWaits = { appendP99: number; loopDelayP99: Record<string, number> };

function waitsOf(before: string, after: string): AcceptWaits {
  const appendCounts = (text: string) =>
    [...text.matchAll(/^event_store_append_seconds_bucket\{([^}]*)\} (\d+)/gm)]
      .filter((m) => /outcome="ok"/.test(m[1]))
      .map((m): [number, number] => {
        const le = /le="([^"]+)"/.exec(m[1])![1];
        return [le === '+Inf' ? Infinity : Number(le), Number(m[2])];
      });
  const earlier = appendCounts(before);
  const counts = appendCounts(after).map(([le, n], i): [number, number] => [le, n - (earlier[i]?.[1] ?? 0)]);
  const appendP99 = counts.length > 0 && counts[counts.length - 1][1] > 0 ? bucketQuantile(counts, 0.99) : NaN;
  const loopDelayP99 = Object.fromEntries(
    [...after.matchAll(/^nodejs_eventloop_lag_p99_seconds(?:\{([^}]*)\})? ([\d.e+-]+)/gm)].map((m) => [
      /process="([^"]+)"/.exec(m[1] ?? '')?.[1] ?? 'serve',
      Number(m[2]),
    ]),
  );
  return { appendP99, loopDelayP99 };
}

/** The upper bound of the bucket holding quantile `q`, from a histogram's cumulative `[le, count]` buckets. */
function bucketQuantile(buckets: readonly (readonly [number, number])[], q: number): number {
  const total = buckets[buckets.length - 1][1];
  return buckets.find(([, n]) => n >= q * total)?.[0] ?? Infinity;
}

/** p50 and p99 per read model of `projection_lag_seconds` (see `bucketQuantile`), from the counts added since `before` (another scrape). */
function lagOf(metrics: string, before = '') {
  const counts = (text: string) => {
    const buckets = new Map<string, [number, number][]>();
    for (const m of text.matchAll(/^projection_lag_seconds_bucket\{le="([^"]+)",read_model="([^"]+)"\} (\d+)/gm)) {
      const list = buckets.get(m[2]) ?? [];
      list.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[3])]);
      buckets.set(m[2], list);
    }
    return buckets;
  };
  const earlier = counts(before);
  const buckets = new Map(
    [...counts(metrics)].map(([model, list]) => [
      model,
      list.map(([le, n], i): [number, number] => [le, n - (earlier.get(model)?.[i]?.[1] ?? 0)]),
    ]),
  );
  return Object.fromEntries(
    [...buckets].map(([model, list]) => [model, { p50: bucketQuantile(list, 0.5), p99: bucketQuantile(list, 0.99) }]),
  );
}

async function startChild(name: string, args: string[]): Promise<Started> {
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(/ready (\d+)/.exec(String(d))![1])));
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
  return { name, url: `http://127.0.0.1:${port}`, child };
}

/** `npm start` as built: dist/bin/serve.js, ready when /readyz answers (the worker consumes). */
export async function startServe(env: Record<string, string>, logFile: string): Promise<Started> {
  const port = await freePort();
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [join(SERVICE_ROOT, 'dist', 'bin', 'serve.js')], {
    cwd: SERVICE_ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if ((await fetch(`${url}/readyz`).catch(() => null))?.ok) return { name: 'serve', url, child };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`serve did not get ready:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
}
