import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';

/**
 * One load figure: autocannon in the bench's own process against a server in another. The
 * warm-up runs first with the same requests and is discarded (JIT, connection pools, caches).
 * Baseline and service get the same options, including the response callback, so the load
 * generator costs the same on both sides.
 */

export type LoadOptions = {
  url: string;
  method: 'GET' | 'POST';
  /** The status every response must have; any other is counted and shown. */
  expect: number;
  connections: number;
  warmupSeconds: number;
  seconds: number;
  headers?: Record<string, string>;
  body?: string;
  /** A path per request (rotating over ids); default: the url's path. */
  nextPath?: () => string;
  /** Headers added to each request, made per request (a new Idempotency-Key each). */
  nextHeaders?: () => Record<string, string>;
  /** Sees every expected response's body (the accept phase collects job ids with it). */
  onBody?: (body: string) => void;
  /** The server's process id: its CPU time over each measured turn is taken from /proc. */
  serverPid?: number;
};

/** CPU seconds a server used: all its threads, and its main thread (the event loop) alone. */
export type ServerCpu = { readonly process: number; readonly mainThread: number };

export type LoadResult = {
  requestsPerSecond: number;
  /** How long it was measured. */
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Responses other than `expect`, by status, plus socket errors and timeouts. */
  unexpected: Map<string, number>;
  /** A few bodies of unexpected responses, to say what went wrong. */
  samples: string[];
  /** Requests per second of each measured turn, in order (one, when not measured in turns). */
  turns: number[];
  /** The server's CPU over the measured turns (`serverPid` given, on Linux). */
  cpu?: ServerCpu;
};

const TICKS = 100; // USER_HZ on Linux

/** utime + stime of /proc/<pid>[/task/<tid>]/stat, in seconds; undefined without /proc. */
function cpuSeconds(path: string): number | undefined {
  try {
    const text = readFileSync(path, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return undefined;
  }
}

function serverCpu(pid: number | undefined): ServerCpu | undefined {
  if (pid === undefined) return undefined;
  const [all, main] = [cpuSeconds(`/proc/${pid}/stat`), cpuSeconds(`/proc/${pid}/task/${pid}/stat`)];
  return all === undefined || main === undefined ? undefined : { process: all, mainThread: main };
}

async function run(options: LoadOptions, seconds: number, onBody?: (body: string) => void): Promise<LoadResult> {
  const samples: string[] = [];
  const cpuBefore = serverCpu(options.serverPid);
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: seconds,
    method: options.method,
    headers: { ...options.headers, ...(options.body ? { 'content-type': 'application/json' } : {}) },
    body: options.body,
    requests: [
      {
        // Only when the request changes: with a setupRequest autocannon rebuilds every request, which
        // cost the load generator ~15 µs a POST of the two cores it shares with the server.
        ...((options.nextPath || options.nextHeaders) && { setupRequest: (req: autocannon.Request) => vary(req, options) }),
        onResponse: (status, body) => {
          if (status === options.expect) onBody?.(body);
          else if (samples.length < 5) samples.push(`${status} ${body.slice(0, 300)}`);
        },
      },
    ],
  });
  const unexpected = new Map<string, number>();
  for (const [status, { count = 0 }] of Object.entries(result.statusCodeStats ?? {})) {
    if (Number(status) !== options.expect && count > 0) unexpected.set(status, count);
  }
  if (result.errors > 0) unexpected.set('socket errors', result.errors);
  if (result.timeouts > 0) unexpected.set('timeouts', result.timeouts);
  const cpuAfter = serverCpu(options.serverPid);
  return {
    requestsPerSecond: result.requests.total / result.duration,
    seconds: result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    unexpected,
    samples,
    turns: [result.requests.total / result.duration],
    ...(cpuBefore &&
      cpuAfter && {
        cpu: { process: cpuAfter.process - cpuBefore.process, mainThread: cpuAfter.mainThread - cpuBefore.mainThread },
      }),
  };
}

function vary(req: autocannon.Request, { nextPath, nextHeaders }: LoadOptions): autocannon.Request {
  return {
    ...req,
    ...(nextPath && { path: nextPath() }),
    ...(nextHeaders && { headers: { ...req.headers, ...nextHeaders() } }),
  };
}

/** Unexpected responses of the warm-up count too: every response must have the expected status. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const warm = options.warmupSeconds > 0 ? await run(options, options.warmupSeconds, options.onBody) : null;
  return merge([warm, await run(options, options.seconds, options.onBody)]);
}

/**
 * Baselines and a subject measured in turns (ABCABC…): all warm up, then `rounds` slices of each
 * alternate, so that a change in the machine's speed during the run (this VM's shifts by ±20 %
 * within minutes) weighs on every side alike instead of on whichever ran in the slower minutes.
 * Results come back in the order of `sides`.
 */
export async function compare(sides: readonly LoadOptions[], rounds: number): Promise<LoadResult[]> {
  const slices: (LoadResult | null)[][] = sides.map(() => []);
  for (const [side, options] of sides.entries()) {
    slices[side].push(options.warmupSeconds > 0 ? await run(options, options.warmupSeconds, options.onBody) : null);
  }
  for (let i = 0; i < rounds; i++) {
    for (const [side, options] of sides.entries()) slices[side].push(await run(options, options.seconds / rounds, options.onBody));
  }
  return slices.map(merge);
}

/**
 * Measured slices as one figure; a null or the first of several is a warm-up, whose responses
 * are checked but not counted. The p99 is the worst slice's, the p50 the slices' weighted mean.
 */
function merge([warm, ...measured]: (LoadResult | null)[]): LoadResult {
  const total = measured.reduce((n, r) => n + r!.total, 0);
  const seconds = measured.reduce((n, r) => n + r!.seconds, 0);
  const unexpected = new Map<string, number>();
  for (const r of [warm, ...measured]) for (const [what, n] of r?.unexpected ?? []) unexpected.set(what, (unexpected.get(what) ?? 0) + n);
  return {
    requestsPerSecond: total / seconds,
    seconds,
    p50Ms: Math.round((10 * measured.reduce((n, r) => n + r!.p50Ms * r!.total, 0)) / Math.max(1, total)) / 10,
    p99Ms: Math.max(...measured.map((r) => r!.p99Ms)),
    total,
    unexpected,
    samples: [warm, ...measured].flatMap((r) => r?.samples ?? []).slice(0, 5),
    turns: measured.flatMap((r) => r!.turns),
    ...(measured.every((r) => r!.cpu) && {
      cpu: {
        process: measured.reduce((n, r) => n + r!.cpu!.process, 0),
        mainThread: measured.reduce((n, r) => n + r!.cpu!.mainThread, 0),
      },
    }),
  };
}

/**
 * The server's CPU per request over the measured turns, in µs: all its threads and its main
 * thread. On a machine shared with other work a rate moves with what else runs, and CPU per
 * request moves less (see docs/decisions.md); undefined without `serverPid` or /proc.
 */
export const cpuPerRequest = (r: LoadResult): { process: number; mainThread: number } | undefined =>
  r.cpu && r.total > 0 ? { process: (r.cpu.process * 1e6) / r.total, mainThread: (r.cpu.mainThread * 1e6) / r.total } : undefined;

/**
 * The subject's rate over the baseline's, turn by turn (each pair ran seconds apart): shows a
 * trend over the turns (a warming cache) or one turn the VM slowed down, which the overall
 * ratio hides.
 */
export const turnRatios = (subject: LoadResult, baseline: LoadResult): number[] => subject.turns.map((rate, i) => rate / baseline.turns[i]);
