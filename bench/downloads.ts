import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { createLocalBlobStore } from '../lib/adapters/local/blob-store';
import { signDownloadUrl } from '../lib/app/downloads';
import { freePort, ROOT, startService, stop, type Started } from './processes';

/**
 * (g) Downloads: `curl` fetching a 256 MiB render from the query API's signed download URL, in
 * eight 32 MiB ranges one after the other and then whole, against the same from a bare static
 * server of the same file (bench/static-server.ts), each in its own process, in turns.
 */

const exec = promisify(execFile);
const MIB = 1 << 20;
const SIZE = 256 * MIB;
const SECRET = 'bench-download-secret-0123456789';

export type DownloadFigures = { serviceMBps: number; bareMBps: number; turns: number[] };

/** Seconds `curl` took for every range of the file, then the whole file. */
async function curlAll(url: string): Promise<number> {
  const ranges = Array.from({ length: 8 }, (_, i) => `${i * 32 * MIB}-${(i + 1) * 32 * MIB - 1}`);
  let seconds = 0;
  for (const range of [...ranges, null]) {
    const args = ['-s', '-f', '-o', '/dev/null', '-w', '%{time_total} %{size_download}', ...(range ? ['-r', range] : []), url];
    const { stdout } = await exec('curl', args);
    const [time, bytes] = stdout.trim().split(' ').map(Number);
    if (bytes !== (range ? 32 * MIB : SIZE)) throw new Error(`curl got ${bytes} bytes of ${url} (range ${range})`);
    seconds += time;
  }
  return seconds;
}

async function startStatic(file: string): Promise<Started> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'static-server.ts')], {
    cwd: ROOT,
    env: { ...process.env, FILE: file, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => /ready \d+/.test(chunk.toString()) && resolve());
    child.once('exit', (code) => reject(new Error(`the static server exited with ${code}`)));
  });
  return { name: 'static', url: `http://127.0.0.1:${port}`, child };
}

export async function measureDownloads(rounds = 3): Promise<DownloadFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-downloads-'));
  const started: Started[] = [];
  try {
    const bytes = randomBytes(SIZE);
    const file = join(dataDir, 'render.mp4');
    writeFileSync(file, bytes);
    const blobs = createLocalBlobStore({ root: join(dataDir, 'blobs') });
    await blobs.put('bench/project/render', Readable.from([bytes]));
    const env = { DATA_DIR: dataDir, SIGNING_SECRET: SECRET, LOG_LEVEL: 'info' };
    const service = await startService('query-api', env, join(dataDir, 'query-api.log'));
    started.push(service);
    const bare = await startStatic(file);
    started.push(bare);
    const target = { blob: 'bench/project/render', filename: 'Render.mp4', contentType: 'video/mp4' };
    const signed = signDownloadUrl(`${service.url}/v1`, SECRET, target, new Date(Date.now() + 3_600_000));
    await curlAll(signed); // warm-up: the page cache holds the file for both
    const totals = { service: 0, bare: 0 };
    const turns: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const b = await curlAll(`${bare.url}/render.mp4`);
      const s = await curlAll(signed);
      totals.bare += b;
      totals.service += s;
      turns.push(b / s);
    }
    const mbps = (seconds: number) => (rounds * 2 * SIZE) / MIB / seconds;
    return { serviceMBps: mbps(totals.service), bareMBps: mbps(totals.bare), turns };
  } finally {
    for (const s of started.reverse()) await stop(s);
    rmSync(dataDir, { recursive: true, force: true });
  }
}
