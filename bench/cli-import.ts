import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpegPaths } from '../lib/adapters/ffmpeg/binaries';
import { startServe } from './engine';
import { admin, build, ROOT, stop, type Started } from './processes';
import { median } from './stats';

/**
 * (n) `mps import <file> --wait` of a 200 MB file (issue 23) under `npm start`: the CLI's wall time
 * (a child process: `node dist/bin/mps.js import FILE --name … --wait`) against the same import
 * done by hand in the same run: POST the import with an upload item, `curl -T` the file to its
 * upload URL, then poll GET /v1/jobs/{id} every 10 ms until it stops. Turns alternate, the median
 * of BENCH_CLI_ROUNDS each. Goal: within 1.1×.
 */

const exec = promisify(execFile);
const ROUNDS = Math.max(1, Number(process.env.BENCH_CLI_ROUNDS ?? 9));

/**
 * Medians, and each round's times (ms) in the order run: the machine's noise is seen in them.
 * Where the environment sets NODE_EXTRA_CA_CERTS (this machine does, for its package proxy),
 * every Node process parses that file as it starts, whatever it then connects to; `withoutCa`
 * is the CLI started without it, as on a machine that does not set it, in the same turns, and
 * `nodeStartMs` what `node -e 0` takes each way: the floor of any Node CLI.
 */
export type CliImportFigures = {
  sizeMB: number;
  cliMs: number;
  handMs: number;
  rounds: number;
  cliRuns: number[];
  handRuns: number[];
  withoutCa?: { cliMs: number; cliRuns: number[] };
  nodeStartMs: { asRun: number; withoutCa?: number };
};

const CA_OVERRIDE = 'NODE_EXTRA_CA_CERTS';

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

export async function measureCliImport(): Promise<CliImportFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  const file = join(dir, 'long.wav');
  // 1,100 s of 48 kHz stereo 16-bit: about 211 MB.
  await exec(resolveFfmpegPaths().ffmpeg, [
    ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=1100'],
    ...['-ac', '2', '-c:a', 'pcm_s16le', file],
  ]);
  const size = statSync(file).size;
  const env = { DATA_DIR: join(dir, 'data'), TRANSCRIBER: 'none', LOG_LEVEL: 'warn', MEDIA_MAX_BYTES: String(1024 * 1024 * 1024) };
  let serve: Started | undefined;
  try {
    await build();
    serve = await startServe(env, join(dir, 'serve.log'));
    const { token } = await admin(env, 'drive', 'create', '--name', 'bench-cli');
    const api = async (path: string, body?: unknown) => {
      const r = await fetch(`${serve!.url}/v1${path}`, {
        method: body ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
      return (await r.json()) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    };
    const byHand = async (round: number) => {
      const start = process.hrtime.bigint();
      const accepted = await api('/jobs/import/project_media', {
        project_name: `by hand ${round}`,
        add_media: { 'long.wav': { content_type: 'audio/wav', file_size: size } },
      });
      const url = accepted.upload_urls['long.wav'].upload_url.replace(/^http:\/\/localhost:\d+/, serve!.url);
      await exec('curl', ['-s', '-f', '-o', '/dev/null', '-H', 'Content-Type: application/octet-stream', '-T', file, url]);
      for (;;) {
        const job = await api(`/jobs/${accepted.job_id}`);
        if (job.job_state === 'stopped') {
          if (job.result.status !== 'success') throw new Error(`the import ended ${JSON.stringify(job.result)}`);
          return seconds(start);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const byCli = async (round: number, withoutCa = false) => {
      const start = process.hrtime.bigint();
      const base = withoutCa ? withoutCaOverride() : process.env;
      await new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, [join(ROOT, 'dist', 'bin', 'mps.js'), 'import', file, '--name', `cli ${round}`, '--wait'], {
          env: { ...base, MPS_BASE_URL: `${serve!.url}/v1`, MPS_TOKEN: token, XDG_CONFIG_HOME: join(dir, 'config') },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let err = '';
        child.stderr!.on('data', (d) => (err += d));
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`mps import exited ${code}: ${err.slice(-2000)}`))));
      });
      return seconds(start);
    };
    const hand: number[] = [];
    const cli: number[] = [];
    const cliWithoutCa: number[] = [];
    const overridden = Boolean(process.env[CA_OVERRIDE]);
    for (let round = 0; round < ROUNDS; round++) {
      // Each run starts with no dirty pages: the 211 MB the previous one stored would otherwise be
      // written back to the disk during this one, on one side or the other by chance.
      await exec('sync');
      hand.push(await byHand(round));
      await exec('sync');
      cli.push(await byCli(round));
      if (overridden) {
        await exec('sync');
        cliWithoutCa.push(await byCli(round, true));
      }
    }
    const ms = (xs: number[]) => xs.map((x) => Math.round(x));
    return {
      sizeMB: size / 1e6,
      cliMs: median(cli),
      handMs: median(hand),
      rounds: ROUNDS,
      cliRuns: ms(cli),
      handRuns: ms(hand),
      ...(overridden ? { withoutCa: { cliMs: median(cliWithoutCa), cliRuns: ms(cliWithoutCa) } } : {}),
      nodeStartMs: {
        asRun: await nodeStart(process.env),
        ...(overridden ? { withoutCa: await nodeStart(withoutCaOverride()) } : {}),
      },
    };
  } finally {
    await stop(serve);
    rmSync(dir, { recursive: true, force: true });
  }
}

function withoutCaOverride(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[CA_OVERRIDE];
  return env;
}

/** The median wall time of `node -e 0` over nine starts. */
async function nodeStart(env: NodeJS.ProcessEnv): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    const start = process.hrtime.bigint();
    await exec(process.execPath, ['-e', '0'], { env });
    times.push(seconds(start));
  }
  return Math.round(median(times));
}

if (require.main === module) {
  measureCliImport().then(
    (f) => console.log(JSON.stringify({ ...f, ratio: f.cliMs / f.handMs })),
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
