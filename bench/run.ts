import { measureCliImport } from './cli-import';
import { measureRepublish } from './republish';
import { measureJobEvents } from './job-events';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createSqliteEventStore } from '../lib/adapters/embedded/event-store';
import { PROJECTIONS_GROUP } from '../services/query-api/projector';
import { compare, cpuPerRequest, load, turnRatios, type LoadOptions, type LoadResult } from './load';
import { profilesByThread, summarize, type Share } from './profile';
import { admin, build, killAll, ROOT, startBaseline, startService, stop, type Started } from './processes';
import { measureReplay } from './replay';
import { measureSearch } from './search';
import { measureWebhooks } from './webhooks';
import { measureAgentFillers } from './agent-fillers';
import { measureDownloads } from './downloads';
import { measureExports } from './export-transcript';
import { measureEngine, type EngineFigures } from './engine';
import { measureRender, renderRows } from './render';

/**
 * `npm run bench`: every figure is a ratio against a baseline measured in the same run on the
 * same machine, because absolute numbers say more about the machine than about the code. The
 * baseline is a bare Koa + @koa/router server in its own process, sent the same requests as the
 * service and answering them with a sample of the service's own answer (the same exchange: what
 * the ratio leaves is the service's own work; see `baseline-server.ts`), and, for comparison
 * with earlier runs, a 30-byte answer on a bare path; the service is the built
 * command-api and query-api, each in its own process on the embedded adapters, sharing one fresh
 * DATA_DIR; autocannon runs here, in neither. Goals are DESIGN §7's.
 *
 * (a) is measured twice: as clients send it, and with a new `Idempotency-Key` on every request
 * (DESIGN §8), each against a bare Koa server sent the same requests (the keyed baseline gets the
 * same header, rebuilt per request by the same autocannon option).
 *
 * query-api starts only once the accept phase is over and its projector has caught up, so that
 * (a) measures the accept path alone and (b) measures reads, not projection.
 *
 * The two sides of an HTTP figure take turns (bare, service, bare, service): this VM's speed
 * shifts by a fifth within minutes, which measured one after the other moved a ratio by as much.
 *
 * Environment: BENCH_CONNECTIONS (50), BENCH_WARMUP and BENCH_DURATION (3 and 10 seconds per HTTP
 * figure), BENCH_ROUNDS (5: the turns each side's DURATION is cut into), BENCH_POLLED_JOBS (20000
 * jobs polled in (b); the rest are read once each for the first-read figure), BENCH_JOBS (5000
 * finished jobs seeded for replay), BENCH_LOG_LEVEL (info, as in production), BENCH_PROFILE=1
 * (then CPU profiles of both services under their load), BENCH_ONLY (the phases to run, as
 * letters: `ab` for the HTTP figures alone; `g` the render figure alone, see bench/render.ts;
 * `m` the job events figure, BENCH_SSE_JOBS and BENCH_SSE_CONCURRENCY, see bench/job-events.ts).
 */

const num = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
};
const CONNECTIONS = num('BENCH_CONNECTIONS', 50);
const WARMUP = num('BENCH_WARMUP', 3);
const DURATION = num('BENCH_DURATION', 10);
// Baseline and service take turns, DURATION / ROUNDS seconds at a time (see `compare`).
const ROUNDS = Math.max(1, Math.round(num('BENCH_ROUNDS', 5)));
const REPLAY_JOBS = num('BENCH_JOBS', 5000);
// Clients poll a job until it ends, many times each. (b) polls this many of the jobs (a) accepted
// (spread over them), about ten reads each: a working set that does not depend on how fast (a)
// was. A faster accept path once made (b) harder, with more jobs each read fewer times.
const POLLED_JOBS = Math.max(1, Math.round(num('BENCH_POLLED_JOBS', 20_000)));
// Production's default level: the access log line per request is part of what a request costs.
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
const PROFILE = process.env.BENCH_PROFILE === '1';
// BENCH_ONLY=ab runs (a) and (b) only, the HTTP figures; BENCH_ONLY=a the accept figures alone, in about a minute.
const ONLY = process.env.BENCH_ONLY;
const runs = (letter: string) => !ONLY || ONLY.includes(letter);

const GOALS = {
  postRatio: 0.5,
  keyedPostRatio: 0.45,
  postP99Ms: 50,
  getRatio: 0.7,
  replayPerSecond: 50_000,
  lagP99Seconds: 0.05,
  importsRatio: 0.5,
  downloadRatio: 0.8,
};
const IMPORT_BODY = JSON.stringify({ project_name: 'Bench', add_media: { 'a.wav': { url: 'https://media.example.com/a.wav' } } });

type Row = { figure: string; value: string; baseline?: string; ratio?: string; goal?: string; met?: boolean };

const rate = (n: number, unit: string) => `${Math.round(n).toLocaleString('en-US')} ${unit}`;
const phase = (text: string) => process.stderr.write(`bench: ${text}\n`);

function printTable(rows: Row[]) {
  const cells = rows.map((r) => [
    r.figure,
    r.value,
    r.baseline ?? '',
    r.ratio ?? '',
    r.goal ?? '',
    r.met === undefined ? '' : r.met ? 'yes' : 'NO',
  ]);
  const header = ['figure', 'value', 'baseline', 'ratio', 'goal', 'met'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((s, i) => (i === 0 ? s.padEnd(widths[i]) : s.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const c of cells) console.log(line(c));
}

function describeUnexpected(name: string, result: LoadResult) {
  if (result.unexpected.size === 0) return;
  const counts = [...result.unexpected].map(([what, n]) => `${what}: ${n}`).join(', ');
  console.log(`\n${name}: unexpected responses (${counts})`);
  for (const s of result.samples) console.log(`  ${s}`);
}

/** The projector (inside query-api) has handled everything the accept phase wrote. */
async function projectionCaughtUp(dataDir: string, timeoutMs = 180_000): Promise<void> {
  const store = createSqliteEventStore({ path: join(dataDir, 'events.sqlite'), readonly: true });
  try {
    const head = store.headPosition();
    const deadline = Date.now() + timeoutMs;
    while ((store.loadCheckpoint(PROJECTIONS_GROUP) ?? 0) < head) {
      if (Date.now() > deadline) throw new Error(`the projector did not reach position ${head} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await store.close();
  }
}

/** Shares of a thread's busy time, also as µs per request so that a fix can be weighed against the bare server's whole request. */
function printProfile(thread: string, shares: { title: string; rows: Share[] }[], busyMs: number, requests: number) {
  const perRequest = (ms: number) => `${((ms * 1000) / requests).toFixed(1).padStart(6)} µs/req`;
  console.log(`\n${thread}: ${Math.round(busyMs)} ms busy over ${requests} requests = ${perRequest(busyMs).trim()}`);
  for (const { title, rows } of shares) {
    console.log(`  ${title}`);
    for (const r of rows) console.log(`    ${r.percent.toFixed(1).padStart(5)} %  ${perRequest(r.ms)}  ${r.name}`);
  }
}

/** (f) alone, or after the rest: the engine as `npm start` runs it (bench/engine.ts). */
async function engine(): Promise<boolean> {
  phase('(f) the engine as users run it: npm start, every job processed (stale reads, lag, overdraw, imports/s, accept)');
  const f = await measureEngine({ connections: CONNECTIONS, warmupSeconds: WARMUP, seconds: DURATION, rounds: ROUNDS });
  const lagP99 = Math.max(...Object.values(f.lag).map((l) => l.p99));
  const importsRatio = f.imports.perSecond / f.imports.ffprobePerSecond;
  const met = {
    stale: f.staleAfterDelete === 0 && f.staleAfterStop === 0,
    lag: lagP99 <= GOALS.lagP99Seconds,
    overdraw: f.overdraw.overdrawn === 0 && f.overdraw.mismatched === 0,
    imports: importsRatio >= GOALS.importsRatio,
    acceptP99: f.accept.service.p99Ms <= GOALS.postP99Ms,
  };
  console.log(`\n(f) the engine as users run it (npm start, every job processed)\n`);
  printTable(engineRows(f, met, lagP99, importsRatio));
  console.log(
    `\nsummary (f): ${JSON.stringify({ ...f, accept: undefined, accept_rps: Math.round(f.accept.service.requestsPerSecond), accept_ratio: round(ratioOf(f.accept.service, f.accept.bare)), accept_p99_ms: f.accept.service.p99Ms, imports_ratio: round(importsRatio), met })}`,
  );
  return Object.values(met).every(Boolean);
}

function engineRows(f: EngineFigures, met: Record<string, boolean>, lagP99: number, importsRatio: number): Row[] {
  const ms = (s: number) => (Number.isFinite(s) ? `${Math.round(s * 1000)} ms` : '> 10 s');
  return [
    {
      figure: `(f) stale reads: DELETE then GET (${f.pairs} pairs)`,
      value: String(f.staleAfterDelete),
      goal: '0',
      met: f.staleAfterDelete === 0,
    },
    {
      figure: `(f) stale reads: stopped then project (${f.stops} jobs)`,
      value: String(f.staleAfterStop),
      goal: '0',
      met: f.staleAfterStop === 0,
    },
    ...Object.entries(f.lag).map(([model, l]) => ({ figure: `(f) projection lag, ${model}`, value: `p50 ${ms(l.p50)}, p99 ${ms(l.p99)}` })),
    { figure: '(f) projection lag p99, worst model', value: ms(lagP99), goal: '<= 50 ms', met: met.lag },
    {
      figure: '    events per projector batch meanwhile (mean)',
      value: Number.isFinite(f.projectorBatch) ? f.projectorBatch.toFixed(1) : 'not reported',
    },
    {
      figure: `(f) overdraw: ${f.overdraw.runs} runs of 200 imports on 150 s`,
      value: `${f.overdraw.overdrawn} overdrawn, ${f.overdraw.mismatched} unsettled, most used ${Math.round(f.overdraw.maxUsed * 100) / 100} s`,
      goal: '0',
      met: met.overdraw,
    },
    {
      figure: `(f) imports finished (${f.imports.rounds} × ${f.imports.count} × 3 s WAV, warm)`,
      value: rate(f.imports.perSecond, 'jobs/s'),
      baseline: `ffprobe ×2: ${rate(f.imports.ffprobePerSecond, '/s')}`,
      ratio: importsRatio.toFixed(2),
      goal: `>= ${GOALS.importsRatio}`,
      met: met.imports,
    },
    {
      figure: '    CPU per import (service, all processes)',
      value: `${(f.imports.cpuPerImport * 1000).toFixed(1)} ms`,
      baseline: `ffprobe: ${(f.imports.ffprobeCpu * 1000).toFixed(1)} ms`,
      ratio: (f.imports.ffprobeCpu / f.imports.cpuPerImport).toFixed(2),
    },
    {
      figure: '    by process',
      value: Object.entries(f.imports.cpuPerImportByProcess)
        .sort(([, a], [, b]) => b - a)
        .map(([p, cpu]) => `${p} ${(cpu * 1000).toFixed(1)}`)
        .join(', '),
    },
    {
      figure: `    the first ${f.imports.count} of the fresh service (cold)`,
      value: `${rate(f.imports.cold.perSecond, 'jobs/s')}, ${(f.imports.cold.cpuPerImport * 1000).toFixed(1)} ms CPU`,
      ratio: (f.imports.cold.perSecond / f.imports.ffprobePerSecond).toFixed(2),
    },
    {
      figure: '(f) accept, processors saturated',
      value: `${rate(f.accept.service.requestsPerSecond, 'req/s')}, p99 ${f.accept.service.p99Ms} ms`,
      baseline: rate(f.accept.bare.requestsPerSecond, 'req/s'),
      ratio: ratioOf(f.accept.service, f.accept.bare).toFixed(2),
      goal: `p99 <= ${GOALS.postP99Ms} ms`,
      met: met.acceptP99,
    },
    {
      figure: '    meanwhile, p99 of',
      value: [
        `append ≤ ${ms(f.accept.waits.appendP99)}`,
        ...Object.entries(f.accept.waits.loopDelayP99).map(([p, s]) => `${p} loop delay ${ms(s)}`),
      ].join(', '),
    },
  ];
}

/** (g) downloads (bench/downloads.ts). */
async function downloads(): Promise<boolean> {
  phase('(g) downloads: curl of a 256 MiB render by signed URL (8 ranges, then whole) against a bare static server, in turns');
  const g = await measureDownloads();
  const ratio = g.serviceMBps / g.bareMBps;
  const met = ratio >= GOALS.downloadRatio;
  console.log(`\n(g) downloads\n`);
  printTable([
    { figure: '(g) bare static server of the file (baseline)', value: `${Math.round(g.bareMBps)} MiB/s` },
    {
      figure: '(g) GET {BASE_URL}/downloads/… with Range',
      value: `${Math.round(g.serviceMBps)} MiB/s`,
      ratio: ratio.toFixed(2),
      goal: `>= ${GOALS.downloadRatio}`,
      met,
    },
    { figure: '    ratio turn by turn', value: g.turns.map((t) => t.toFixed(2)).join(' ') },
  ]);
  console.log(`\nsummary (g): ${JSON.stringify({ download_ratio: round(ratio), ...g, met })}`);
  return met;
}

/**
 * (h) folding 20,000 edit events of one composition (bench/composition-fold.ts, in its own process for --expose-gc), and a
 * project of 10,000 files (bench/project-fold.ts).
 */
async function compositionFold(): Promise<boolean> {
  phase('(h) folding 20,000 edit events of one composition (time and heap), and a project of 10,000 files');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', join(ROOT, 'bench', 'composition-fold.ts')],
    {
      cwd: ROOT,
      maxBuffer: 1 << 20,
    },
  );
  console.log(`\n(h) ${stdout.trim()}`);
  // A project's stream, never cut: what the first command on a project of 10,000 files costs after a start.
  const project = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'project-fold.ts')], {
    cwd: ROOT,
    maxBuffer: 1 << 20,
  });
  console.log(`(h) ${project.stdout.trim()}`);
  return true;
}

/** (i) render time against one hand-written ffmpeg command (bench/render.ts); no services needed. */
async function render(): Promise<boolean> {
  phase('(i) render: a 60 s 1080p composition (three clips, two sources, two cuts) against one hand-written ffmpeg command');
  const rows = renderRows(await measureRender());
  printTable(rows);
  return rows.every((r) => r.met !== false);
}

/** (j) transcript export of a one-hour composition in each format against GET /v1/projects/{id} (bench/export-transcript.ts). */
async function exports(): Promise<boolean> {
  phase('(j) transcript export: a one-hour composition (9,000 words) in each format, against GET /v1/projects/{id} of it');
  const j = await measureExports();
  const goalOf = (format: string) => (format === 'docx' ? 10 : 3);
  const rows: Row[] = [
    { figure: '(j) GET /v1/projects/{id} of the project (baseline, median of all rounds)', value: `${j.projectMs.toFixed(1)} ms` },
  ];
  for (const [format, f] of Object.entries(j.formats)) {
    rows.push({
      figure: `(j) POST /v1/export/transcript, ${format}`,
      value: `${f.ms.toFixed(1)} ms (GET ${f.getMs.toFixed(1)} ms in its rounds)`,
      ratio: `${f.ratio.toFixed(1)}×`,
      goal: `<= ${goalOf(format)}×`,
      met: f.ratio <= goalOf(format),
    });
  }
  rows.push({
    figure:
      "(j) the hour's SRT cues made anew, in the process alone (the first SRT export after an edit adds it; later ones read them kept)",
    value: `${j.cuesMs.toFixed(1)} ms`,
  });
  console.log(`\n(j) transcript export (${j.words} words)\n`);
  printTable(rows);
  return rows.every((r) => r.met !== false);
}

/** (k) "remove filler words" on a one-hour transcript, job creation to stop, against GET /v1/projects/{id} (bench/agent-fillers.ts). */
async function agentTurn(): Promise<boolean> {
  phase('(k) agent: "remove filler words" on a one-hour transcript (9,000 words, 300 fillers), against GET /v1/projects/{id}');
  const k = await measureAgentFillers();
  const ratio = k.turnMs / k.projectMs;
  const met = ratio <= 10 && k.eventsPerTurn.every((n) => n === 1);
  console.log(`\n(k) agent turn (${k.words} words, ${k.fillers} fillers)\n`);
  printTable([
    { figure: '(k) GET /v1/projects/{id} of the project (baseline)', value: `${k.projectMs.toFixed(1)} ms` },
    {
      figure: '(k) "remove filler words": created → stopped',
      value: `${k.turnMs.toFixed(0)} ms`,
      ratio: `${ratio.toFixed(1)}×`,
      goal: '<= 10×',
      met,
    },
    { figure: '    composition events per turn', value: k.eventsPerTurn.join(' ') },
  ]);
  return met;
}

/** (l) an unchanged republish under `npm start`, POST → stopped, beside the first publish (bench/republish.ts). */
async function republish(): Promise<boolean> {
  phase('(l) publish: an unchanged republish of a 10 s 720p composition under npm start, POST → stopped, beside the first publish');
  const l = await measureRepublish();
  const met = l.republishMs < 1000;
  console.log(`\n(l) republish (${l.rounds} rounds)\n`);
  printTable([
    { figure: '(l) first publish (renders): POST → stopped', value: `${l.firstMs.toFixed(0)} ms` },
    {
      figure: '(l) unchanged republish (render cache): POST → stopped',
      value: `${l.republishMs.toFixed(0)} ms`,
      ratio: `${(l.republishMs / l.firstMs).toFixed(2)}× of the first`,
      goal: '< 1000 ms',
      met,
    },
    { figure: '    the job itself: created_at → stopped_at', value: `${l.republishJobMs.toFixed(0)} ms` },
  ]);
  return met;
}

/** (m) live job events under `npm start`: stop → seen by an SSE client, against polling every 1 s (bench/job-events.ts). */
async function jobEvents(): Promise<boolean> {
  phase("(m) job events: a job's stopped_at → the client sees it, SSE against polling GET every 1 s, under npm start");
  const m = await measureJobEvents();
  const met = m.sse.p99 < 100;
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  console.log(`\n(m) job events (${m.jobs} jobs)\n`);
  printTable([
    {
      figure: '(m) SSE: stopped_at → seen',
      value: `p50 ${ms(m.sse.p50)}, p99 ${ms(m.sse.p99)}, max ${ms(m.sse.max)}`,
      goal: 'p99 < 100 ms',
      met,
    },
    {
      figure: '    polling GET every 1 s: stopped_at → seen',
      value: `p50 ${ms(m.polling.p50)}, p99 ${ms(m.polling.p99)}, max ${ms(m.polling.max)}`,
    },
  ]);
  return met;
}

/** (n) `mps import <file> --wait` of a 200 MB file against curl -T of it plus the job's own time (bench/cli-import.ts). */
async function cliImport(): Promise<boolean> {
  phase('(n) CLI: mps import <200 MB file> --wait under npm start, against POST + curl -T to the upload URL + polling to stopped');
  const n = await measureCliImport();
  const ratio = n.cliMs / n.handMs;
  console.log(`\n(n) CLI import (${n.sizeMB.toFixed(0)} MB, median of ${n.rounds})\n`);
  printTable([
    { figure: '(n) by hand: POST, curl -T, poll to stopped (baseline)', value: `${n.handMs.toFixed(0)} ms` },
    {
      figure: '(n) mps import FILE --wait',
      value: `${n.cliMs.toFixed(0)} ms`,
      ratio: `${ratio.toFixed(2)}×`,
      goal: '<= 1.1×',
      met: ratio <= 1.1,
    },
    ...(n.withoutCa
      ? [
          {
            figure: "(n) the same, Node started without this machine's NODE_EXTRA_CA_CERTS (as where it is not set; reported)",
            value: `${n.withoutCa.cliMs.toFixed(0)} ms`,
            ratio: `${(n.withoutCa.cliMs / n.handMs).toFixed(2)}×`,
          },
        ]
      : []),
    {
      figure: '(n) node -e 0: a Node process started and ended (the floor of any Node CLI)',
      value: `${n.nodeStartMs.asRun} ms${n.nodeStartMs.withoutCa === undefined ? '' : ` (${n.nodeStartMs.withoutCa} ms without NODE_EXTRA_CA_CERTS)`}`,
    },
  ]);
  // The rounds as run, in turns: on a shared machine the spread says how far to trust the medians.
  const without = n.withoutCa ? `; mps without NODE_EXTRA_CA_CERTS ${n.withoutCa.cliRuns.join(', ')}` : '';
  console.log(`rounds (ms): by hand ${n.handRuns.join(', ')}; mps ${n.cliRuns.join(', ')}${without}`);
  return ratio <= 1.1;
}

/**
 * A phase starts once the writes of the phases before it are on the disk: `sync` waits for their
 * dirty pages and for the discards of the files they deleted (this machine's disk is mounted with
 * `discard`, and phase (d) alone deletes a search index of hundreds of MB), which would otherwise
 * land in the next phase's fsyncs. Reduced `BENCH_ONLY` runs measured the engine's saturated
 * accept p99 at 45–58 ms where full runs read 87–103.
 */
async function settled<T>(measure: () => Promise<T>): Promise<T> {
  await promisify(execFile)('sync');
  return measure();
}

/** Phases that need nothing of the HTTP figures' set-up: BENCH_ONLY made of these runs them alone. */
const STANDALONE: Record<string, () => Promise<boolean>> = {
  f: engine,
  g: downloads,
  h: compositionFold,
  i: render,
  j: exports,
  k: agentTurn,
  l: republish,
  n: cliImport,
  m: jobEvents,
};

async function main() {
  if (ONLY && [...ONLY].every((letter) => letter in STANDALONE)) {
    await build();
    for (const letter of ONLY) await settled(STANDALONE[letter]);
    return;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-data-'));
  const env = { DATA_DIR: dataDir, LOG_LEVEL, RATE_LIMIT_PER_MINUTE: '1000000000' };
  const started: (Started | undefined)[] = [];
  try {
    phase('building (tsc -p tsconfig.build.json)');
    await build();
    const { token } = await admin(env, 'drive', 'create', '--name', 'Bench');
    const auth = { authorization: `Bearer ${token}` };
    const common = { connections: CONNECTIONS, warmupSeconds: WARMUP, seconds: DURATION };

    phase(
      `(a) POST: bare Koa (two baselines) and the accept path in turns (${WARMUP} s warm-up + ${ROUNDS} × ${DURATION / ROUNDS} s each, ${CONNECTIONS} connections)`,
    );
    const command = await startService('command-api', env, join(dataDir, 'command-api.log'));
    started.push(command);
    const post: Omit<LoadOptions, 'url'> = { ...common, method: 'POST', expect: 201, body: IMPORT_BODY };
    const acceptUrl = `${command.url}/v1/jobs/import/project_media`;
    // One import accepted first: its answer is the one the same-exchange baseline sends back.
    const postAnswer = await sampleAnswer(acceptUrl, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: IMPORT_BODY,
    });
    const jobIds: string[] = [(JSON.parse(postAnswer) as { job_id: string }).job_id];
    const postBaseline = await startBaseline({ BASELINE_POST_ANSWER: postAnswer });
    started.push(postBaseline);
    const [thinPost, barePost, accept] = await compare(
      [
        { ...post, url: `${postBaseline.url}/post` },
        // The same request, and its answer read the same way (the accept side collects job ids).
        {
          ...post,
          url: `${postBaseline.url}/v1/jobs/import/project_media`,
          headers: auth,
          onBody: (body) => void JSON.parse(body),
          serverPid: postBaseline.child.pid,
        },
        {
          ...post,
          url: acceptUrl,
          headers: auth,
          onBody: (body) => jobIds.push((JSON.parse(body) as { job_id: string }).job_id),
          serverPid: command.child.pid,
        },
      ],
      ROUNDS,
    );
    // The same, each request with a new Idempotency-Key, on both sides: the key's read and its
    // record in the import's batch, against the same request shape (autocannon rebuilds each
    // request for its header, at the same cost for both).
    phase(`(a) POST with Idempotency-Key: bare Koa and the accept path in turns, a new key per request`);
    let keys = 0;
    const keyed: Omit<LoadOptions, 'url'> = {
      ...post,
      headers: auth,
      nextHeaders: () => ({ 'idempotency-key': `bench-${++keys}` }),
      onBody: (body) => void JSON.parse(body),
    };
    const [bareKeyed, acceptKeyed] = await compare(
      [
        { ...keyed, url: `${postBaseline.url}/v1/jobs/import/project_media`, serverPid: postBaseline.child.pid },
        { ...keyed, url: acceptUrl, serverPid: command.child.pid },
      ],
      ROUNDS,
    );
    await stop(command);
    await stop(postBaseline);
    if (jobIds.length === 1) throw new Error(`no import was accepted under load in (a): ${accept.samples.join(' | ') || 'no responses'}`);

    // (b) needs the jobs (a) accepted; BENCH_ONLY=a leaves it out (the accept figures in about a minute).
    const reads = runs('b') ? await measureReads(env, dataDir, started, auth, common, jobIds) : undefined;

    if (runs('c')) phase(`(c) replay of ${REPLAY_JOBS} seeded jobs (${REPLAY_JOBS * 5} events)`);
    const replay = runs('c') ? await settled(() => measureReplay(REPLAY_JOBS)) : undefined;

    if (runs('d')) phase('(d) search: one drive with 10,000 projects and 1,000 hours of transcripts (embedded SearchIndex)');
    const search = runs('d') ? await settled(measureSearch) : undefined;

    if (runs('e')) phase('(e) webhook deliveries to a loopback receiver in its own process');
    const hooks = runs('e') ? await settled(measureWebhooks) : undefined;

    const postRatio = ratioOf(accept, barePost);
    const keyedRatio = ratioOf(acceptKeyed, bareKeyed);
    const getRatio = reads && ratioOf(reads.jobRead, reads.bareGet);
    const met = {
      post: postRatio >= GOALS.postRatio,
      p99: accept.p99Ms <= GOALS.postP99Ms,
      all201: accept.unexpected.size === 0,
      keyed: keyedRatio >= GOALS.keyedPostRatio && acceptKeyed.unexpected.size === 0,
      ...(reads && {
        get: getRatio! >= GOALS.getRatio && reads.jobRead.unexpected.size === 0 && reads.jobFirstRead.unexpected.size === 0,
      }),
      ...(replay ? { replay: replay.replayPerSecond >= GOALS.replayPerSecond } : {}),
    };
    console.log(
      `\nnode ${process.version}, ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s per HTTP figure, ` +
        `services on embedded adapters with LOG_LEVEL=${LOG_LEVEL}\n`,
    );
    printTable([
      {
        figure: '(a) bare Koa POST, the same exchange (baseline)',
        value: rate(barePost.requestsPerSecond, 'req/s'),
        baseline: ms(barePost),
      },
      {
        figure: '(a) POST /v1/jobs/import/project_media',
        value: rate(accept.requestsPerSecond, 'req/s'),
        ratio: postRatio.toFixed(2),
        goal: `>= ${GOALS.postRatio}`,
        met: met.post,
      },
      {
        figure: '    p99 latency',
        value: `${accept.p99Ms} ms`,
        baseline: `p50 ${accept.p50Ms} ms`,
        goal: `<= ${GOALS.postP99Ms} ms`,
        met: met.p99,
      },
      { figure: '    responses other than 201', value: String(sum(accept.unexpected)), goal: '0', met: met.all201 },
      { figure: '    ratio turn by turn', value: turns(accept, barePost) },
      ...cpuRows(accept, barePost),
      {
        figure: '    against a bare POST /post (30-byte answer)',
        value: rate(thinPost.requestsPerSecond, 'req/s'),
        ratio: ratioOf(accept, thinPost).toFixed(2),
      },
      {
        figure: '(a) bare Koa POST with Idempotency-Key (baseline)',
        value: rate(bareKeyed.requestsPerSecond, 'req/s'),
        baseline: ms(bareKeyed),
      },
      {
        figure: '(a) accept with Idempotency-Key',
        value: rate(acceptKeyed.requestsPerSecond, 'req/s'),
        baseline: ms(acceptKeyed),
        ratio: keyedRatio.toFixed(2),
        goal: `>= ${GOALS.keyedPostRatio}`,
        met: met.keyed,
      },
      { figure: '    ratio turn by turn', value: turns(acceptKeyed, bareKeyed) },
      ...cpuRows(acceptKeyed, bareKeyed),
      { figure: '    of accept without a key', value: '', ratio: ratioOf(acceptKeyed, accept).toFixed(2) },
      ...(reads ? readRows(reads, jobIds.length, met.get ?? false) : []),
      ...(replay
        ? [
            { figure: '(c) $all read (baseline)', value: rate(replay.readPerSecond, 'events/s') },
            {
              figure: '(c) replay into the jobs read model',
              value: rate(replay.replayPerSecond, 'events/s'),
              ratio: (replay.replayPerSecond / replay.readPerSecond).toFixed(2),
              goal: `>= ${rate(GOALS.replayPerSecond, 'ev/s')}`,
              met: met.replay,
            },
          ]
        : []),
      ...(search
        ? [
            {
              figure: `(d) search, one word (${search.projects.toLocaleString('en-US')} projects, ${search.hours.toLocaleString('en-US')} h)`,
              value: `p99 ${search.oneWord.p99} ms`,
              baseline: `p50 ${search.oneWord.p50} ms`,
            },
            { figure: '(d) search, a phrase', value: `p99 ${search.phrase.p99} ms`, baseline: `p50 ${search.phrase.p50} ms` },
          ]
        : []),
      ...(hooks ? [{ figure: `(e) webhook deliveries (${hooks.deliveries})`, value: rate(hooks.perSecond, 'deliveries/s') }] : []),
    ]);
    describeUnexpected('(a) accept', accept);
    describeUnexpected('(a) accept with Idempotency-Key', acceptKeyed);
    if (reads) describeUnexpected('(b) GET /v1/jobs/{id}', reads.jobRead);
    if (reads) describeUnexpected('(b) GET /v1/jobs/{id}, first reads', reads.jobFirstRead);

    if (PROFILE) {
      console.log(
        '\nCPU profiles (separate runs, no warm-up; busy is wall time on the thread, so blocking calls and time lost to other threads count)',
      );
      // query-api first: after the accept load its projector would spend the profile catching up.
      if (reads) await profile('query-api', env, dataDir, reads.pollingLoad);
      await profile('command-api', env, dataDir, (url) =>
        load({ ...post, warmupSeconds: 0, url: `${url}/v1/jobs/import/project_media`, headers: auth }),
      );
      // The keyed path's own costs (the key's hashes, its record in the batch, on both threads).
      await profile(
        'command-api',
        env,
        dataDir,
        (url) => load({ ...keyed, warmupSeconds: 0, url: `${url}/v1/jobs/import/project_media` }),
        'command-api with Idempotency-Key',
      );
    }

    const summary = {
      post_rps: Math.round(accept.requestsPerSecond),
      post_ratio: round(postRatio),
      post_p99_ms: accept.p99Ms,
      post_non_201: sum(accept.unexpected),
      keyed_post_ratio: round(keyedRatio),
      keyed_post_rps: Math.round(acceptKeyed.requestsPerSecond),
      keyed_post_p99_ms: acceptKeyed.p99Ms,
      keyed_post_turns: turnRatios(acceptKeyed, bareKeyed).map(round),
      post_cpu_us: roundedCpu(cpuPerRequest(accept)),
      bare_post_cpu_us: roundedCpu(cpuPerRequest(barePost)),
      keyed_post_cpu_us: roundedCpu(cpuPerRequest(acceptKeyed)),
      bare_keyed_post_cpu_us: roundedCpu(cpuPerRequest(bareKeyed)),
      post_turns: turnRatios(accept, barePost).map(round),
      post_ratio_to_thin: round(ratioOf(accept, thinPost)),
      ...(reads && {
        get_ratio: round(getRatio!),
        get_first_read_ratio: round(ratioOf(reads.jobFirstRead, reads.bareFirst)),
        get_turns: turnRatios(reads.jobRead, reads.bareGet).map(round),
        get_ratio_to_thin: round(ratioOf(reads.jobRead, reads.thinGet)),
      }),
      replay_events_per_s: replay?.replayPerSecond,
      search_one_word_p99_ms: search?.oneWord.p99,
      search_phrase_p99_ms: search?.phrase.p99,
      webhook_deliveries_per_s: hooks?.perSecond,
      goals_met: Object.values(met).every(Boolean),
    };
    console.log(`\nsummary: ${JSON.stringify(summary)}`);
    if (runs('f')) await settled(engine);
    if (runs('g')) await settled(downloads);
    if (runs('h')) await settled(compositionFold);
    if (runs('i')) await settled(render);
    if (runs('j')) await settled(exports);
    if (runs('k')) await settled(agentTurn);
    if (runs('l')) await settled(republish);
    if (runs('n')) await settled(cliImport);
    if (runs('m')) await settled(jobEvents);
  } finally {
    for (const s of started.reverse()) await stop(s);
    if (process.env.BENCH_KEEP_DATA) console.log(`\nkept the bench's data in ${dataDir} (BENCH_KEEP_DATA)`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

type Reads = {
  thinGet: LoadResult;
  bareGet: LoadResult;
  jobRead: LoadResult;
  bareFirst: LoadResult;
  jobFirstRead: LoadResult;
  firstReadShare: number;
  polled: number;
  /** Loads the query API at `url` as the polling figure does (the profile's load). */
  pollingLoad: (url: string) => Promise<LoadResult>;
};

/** (b): query-api projects what (a) accepted, then the polling figure and the first reads, each against the bare GET in turns. */
async function measureReads(
  env: Record<string, string>,
  dataDir: string,
  started: (Started | undefined)[],
  auth: Record<string, string>,
  common: { connections: number; warmupSeconds: number; seconds: number },
  jobIds: readonly string[],
): Promise<Reads> {
  const polled = spread(jobIds, POLLED_JOBS);
  const unread = jobIds.filter((_, i) => !polled.taken.has(i));
  phase(
    `(b) GET: query-api projects the ${jobIds.length} accepted jobs, then bare Koa (two baselines) and GET /v1/jobs/{id} in turns, ` +
      `polling ${polled.ids.length} of them; then first reads of the other ${unread.length}`,
  );
  const query = await startService('query-api', env, join(dataDir, 'query-api.log'));
  started.push(query);
  await projectionCaughtUp(dataDir);
  const get: Omit<LoadOptions, 'url'> = { ...common, method: 'GET', expect: 200 };
  const getAnswer = await sampleAnswer(`${query.url}/v1/jobs/${polled.ids[0]}`, { headers: auth });
  const getBaseline = await startBaseline({ BASELINE_GET_ANSWER: getAnswer });
  started.push(getBaseline);
  const rotating = (ids: readonly string[]) => {
    let next = 0;
    return { nextPath: () => `/v1/jobs/${ids[next++ % ids.length]}`, reads: () => next };
  };
  const [thinGet, bareGet, jobRead] = await compare(
    [
      { ...get, url: `${getBaseline.url}/get` },
      { ...get, url: getBaseline.url, headers: auth, nextPath: rotating(polled.ids).nextPath },
      { ...get, url: query.url, headers: auth, nextPath: rotating(polled.ids).nextPath },
    ],
    ROUNDS,
  );
  // Reads of jobs nobody read before (no kept answer, no page in memory): what a client's
  // first poll of each job costs. A third of DURATION, in 1 s turns: few enough reads that each
  // of the jobs not polled is read once (the share printed says whether they were).
  const coldIds = unread.length > 0 ? unread : polled.ids;
  const firstReads = rotating(coldIds);
  const coldSeconds = Math.max(1, Math.round(DURATION / 3));
  const [bareFirst, jobFirstRead] = await compare(
    [
      { ...get, warmupSeconds: 0, seconds: coldSeconds, url: getBaseline.url, headers: auth, nextPath: rotating(coldIds).nextPath },
      { ...get, warmupSeconds: 0, seconds: coldSeconds, url: query.url, headers: auth, nextPath: firstReads.nextPath },
    ],
    coldSeconds,
  );
  const firstReadShare = unread.length === 0 ? 0 : Math.min(1, unread.length / Math.max(1, firstReads.reads()));
  await stop(query);
  await stop(getBaseline);
  return {
    thinGet,
    bareGet,
    jobRead,
    bareFirst,
    jobFirstRead,
    firstReadShare,
    polled: polled.ids.length,
    pollingLoad: (url) => load({ ...get, warmupSeconds: 0, url, headers: auth, nextPath: rotating(polled.ids).nextPath }),
  };
}

/**
 * The server's CPU per request beside the bare server's, over the same turns: less moved than a
 * rate by what else runs on the machine. The ratio is bare over service, as the rate's is.
 */
function cpuRows(service: LoadResult, bare: LoadResult): Row[] {
  const [s, b] = [cpuPerRequest(service), cpuPerRequest(bare)];
  if (!s || !b) return [];
  const us = (n: number) => `${n.toFixed(0)} µs/req`;
  return [
    {
      figure: '    CPU per request, whole process',
      value: us(s.process),
      baseline: us(b.process),
      ratio: (b.process / s.process).toFixed(2),
    },
    {
      figure: '    CPU per request, main thread',
      value: us(s.mainThread),
      baseline: us(b.mainThread),
      ratio: (b.mainThread / s.mainThread).toFixed(2),
    },
  ];
}

/** The rows of (b). */
function readRows(r: Reads, accepted: number, met: boolean): Row[] {
  const { thinGet, bareGet, jobRead, bareFirst, jobFirstRead, firstReadShare } = r;
  const getRatio = ratioOf(jobRead, bareGet);
  return [
    { figure: '(b) bare Koa GET, the same exchange (baseline)', value: rate(bareGet.requestsPerSecond, 'req/s'), baseline: ms(bareGet) },
    {
      figure: '(b) GET /v1/jobs/{id}',
      value: rate(jobRead.requestsPerSecond, 'req/s'),
      baseline: ms(jobRead),
      ratio: getRatio.toFixed(2),
      goal: `>= ${GOALS.getRatio}`,
      met,
    },
    // The first turn holds the first read of every polled job: it costs more than a repeat.
    { figure: '    ratio turn by turn', value: turns(jobRead, bareGet) },
    { figure: `    jobs polled (of ${accepted} accepted)`, value: r.polled.toLocaleString('en-US') },
    {
      figure: '    against a bare GET /get (30-byte answer)',
      value: rate(thinGet.requestsPerSecond, 'req/s'),
      ratio: ratioOf(jobRead, thinGet).toFixed(2),
    },
    {
      figure: '(b) GET /v1/jobs/{id}, first reads only',
      value: rate(jobFirstRead.requestsPerSecond, 'req/s'),
      baseline: rate(bareFirst.requestsPerSecond, 'req/s'),
      ratio: ratioOf(jobFirstRead, bareFirst).toFixed(2),
    },
    { figure: '    share of those reads that were first reads', value: `${Math.round(firstReadShare * 100)} %` },
  ];
}

/**
 * A separate, profiled run of a service under its load, after the measured ones: the profiler's
 * overhead stays out of the figures. `--cpu-prof` writes a file per thread on exit.
 */
async function profile(
  name: 'command-api' | 'query-api',
  env: Record<string, string>,
  dataDir: string,
  loadOn: (url: string) => Promise<LoadResult>,
  label: string = name,
) {
  const dir = join(dataDir, `profile-${label.replace(/\W+/g, '-')}`);
  mkdirSync(dir);
  const service = await startService(name, env, join(dataDir, `${name}-profiled.log`), ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const { total } = await loadOn(service.url);
  await stop(service);
  const [main, ...others] = profilesByThread(dir);
  if (!main) return console.log(`\nno CPU profile of ${label} was written`);
  const s = summarize(main.file, 16);
  printProfile(
    `${label} main thread`,
    [
      { title: 'self time by package or file', rows: s.selfByArea },
      { title: 'self time by function', rows: s.selfByFunction },
      { title: 'inclusive time by our source file (callees included)', rows: s.inclusiveByOurFile },
    ],
    s.busyMs,
    total,
  );
  for (const other of others) {
    const t = summarize(other.file, 3);
    printProfile(`${label} thread ${other.thread} (the event store's)`, [{ title: 'self time', rows: t.selfByFunction }], t.busyMs, total);
  }
}

/** One answer of the service, as the same-exchange baseline will send it back. */
async function sampleAnswer(url: string, init: RequestInit): Promise<string> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return text;
}

/** `count` of `ids`, spread evenly over them, and the indexes taken. */
function spread(ids: readonly string[], count: number): { ids: string[]; taken: Set<number> } {
  const step = Math.max(1, ids.length / count);
  const taken = new Set<number>();
  for (let at = 0; at < ids.length && taken.size < count; at += step) taken.add(Math.floor(at));
  return { ids: [...taken].map((i) => ids[i]), taken };
}

const ms = (r: LoadResult) => `p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms`;
const turns = (subject: LoadResult, bare: LoadResult) =>
  turnRatios(subject, bare)
    .map((r) => r.toFixed(2))
    .join(' ');
const ratioOf = (subject: LoadResult, baseline: LoadResult) => subject.requestsPerSecond / baseline.requestsPerSecond;
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const round = (x: number) => Math.round(x * 100) / 100;
const roundedCpu = (c: { process: number; mainThread: number } | undefined) =>
  c && { process: Math.round(c.process), main_thread: Math.round(c.mainThread) };

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => (killAll(), process.exit(130)));

main().catch((err) => {
  killAll();
  console.error(err);
  process.exit(1);
});
