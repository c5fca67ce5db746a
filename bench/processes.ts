import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * The processes the bench measures: each server in its own process, so none shares an event loop
 * with autocannon. Every child is tracked and stopped on the way out, also when the bench fails.
 */

export const ROOT = join(__dirname, '..');
/**
 * Where the built services and the admin CLI are taken from: this checkout, or another one's
 * (`BENCH_SERVICE_TREE`, a path to a built checkout) to compare two versions of the service
 * under the same bench, baselines and load generator.
 */
export const SERVICE_ROOT = process.env.BENCH_SERVICE_TREE ?? ROOT;
const exec = promisify(execFile);
const children = new Set<ChildProcess>();

export type Started = { name: string; url: string; child: ChildProcess; logFile?: string };

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export async function build(): Promise<void> {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await exec(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT }).catch((err: { stdout?: string }) => {
    throw new Error(`the build failed (tsc -p tsconfig.build.json):\n${err.stdout ?? err}`);
  });
  // The CLI (dist/bin/mps.js) is esbuild's, as `npm run build` makes it.
  await exec(process.execPath, [join(ROOT, 'dist', 'bin', 'bundle-cli.js')], { cwd: ROOT });
}

/** `node dist/bin/admin.js …` against `DATA_DIR`; returns its JSON output. */
export async function admin(env: NodeJS.ProcessEnv, ...args: string[]): Promise<Record<string, string>> {
  const { stdout } = await exec(process.execPath, [join(SERVICE_ROOT, 'dist', 'bin', 'admin.js'), ...args], {
    cwd: SERVICE_ROOT,
    env: { ...process.env, ...env },
  });
  return JSON.parse(stdout);
}

/** Resolves when `ready` does; rejects with the child's output if it exits first. */
async function whenReady(name: string, child: ChildProcess, ready: Promise<void>, output: () => string): Promise<void> {
  children.add(child);
  child.once('exit', () => children.delete(child));
  let onExit: (code: number | null, signal: string | null) => void = () => undefined;
  const died = new Promise<never>((_, reject) => {
    onExit = (code, signal) => reject(new Error(`${name} exited (${signal ?? code}) before it was ready\n${output()}`));
    child.once('exit', onExit);
  });
  try {
    await Promise.race([ready, died]);
  } finally {
    child.off('exit', onExit);
  }
}

/** The bare Koa server, run through tsx like the bench itself; ready when it prints `ready <port>`. */
export async function startBaseline(env: NodeJS.ProcessEnv = {}): Promise<Started> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const ready = new Promise<void>((resolve) =>
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      if (/^ready \d+$/m.test(out)) resolve();
    }),
  );
  await whenReady('baseline server', child, ready, () => out);
  return { name: 'baseline', url: `http://127.0.0.1:${port}`, child };
}

/** A built service (`dist/services/<name>/main.js`) with its logs in `logFile`; ready when /healthz answers. */
export async function startService(name: string, env: NodeJS.ProcessEnv, logFile: string, nodeFlags: string[] = []): Promise<Started> {
  const port = await freePort();
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...nodeFlags, join(SERVICE_ROOT, 'dist', 'services', name, 'main.js')], {
    cwd: SERVICE_ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  const ready = (async () => {
    while (child.exitCode === null && child.signalCode === null) {
      const res = await fetch(`${url}/healthz`).catch(() => null);
      if (res?.ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  await whenReady(name, child, ready, () => readFileSync(logFile, 'utf8').slice(-4000));
  return { name, url, child, logFile };
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
export async function stop(started: Started | undefined, graceMs = 10_000): Promise<void> {
  const child = started?.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
}
