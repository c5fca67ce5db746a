import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { createSqliteEventStore } from '../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../lib/adapters/embedded/read-store';
import { randomIds, systemClock } from '../lib/adapters/system/clock';
import { createDrive } from '../lib/app/admin';
import { createAuthenticator } from '../lib/app/tenancy';
import { loadSchemas } from '../lib/http/schemas';
import type { NewEvent } from '../lib/ports/event-store';
import { createApp } from '../services/query-api/app';
import { replayReadModels } from '../services/query-api/replay';

/**
 * `npm run bench`: throughput of the read side, each figure as a ratio against a baseline
 * measured in the same run on the same machine (absolute numbers vary between machines; ratios
 * say whether a change made our code slower relative to the floor it stands on).
 */

const JOBS = Number(process.env.BENCH_JOBS ?? 5000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const CONCURRENCY = 16;

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

async function seed(store: ReturnType<typeof createSqliteEventStore>, driveId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    const jobId = `project-media-import-${randomUUID()}`;
    const meta = { partition_key: `p${i % 100}` };
    const t = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
    const ev = (type: string, data: Record<string, unknown>): NewEvent => ({
      id: randomUUID(),
      type,
      data: { job_id: jobId, ...data },
      metadata: meta,
    });
    await store.append(
      `job-${jobId}`,
      [
        ev('JobQueued', {
          job_type: 'import/project_media',
          drive_id: driveId,
          project_id: randomUUID(),
          project_url: 'http://w/p',
          created_by: 'u',
          callback_url: null,
          request: {},
          created_at: t,
        }),
        ev('JobStarted', { attempt: 1, started_at: t }),
        ev('JobProgressed', { label: 'importing', percent: 50, at: t }),
        ev('JobStopped', { result: { status: 'success', media_seconds_used: 1 }, project_url: null, stopped_at: t }),
      ],
      'no_stream',
    );
    ids.push(jobId);
  }
  return ids;
}

async function load(url: string, token: string, paths: string[]): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const path = paths[next++ % paths.length];
        const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
        await res.arrayBuffer();
      }
    }),
  );
  return REQUESTS / seconds(start);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
  const read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
  try {
    const drive = await createDrive({ store, clock: systemClock, ids: randomIds }, { name: 'Bench' });
    const jobIds = await seed(store, drive.drive_id);

    const start = process.hrtime.bigint();
    let events = 0;
    for (let after: string | null = null; ;) {
      const page = await store.readAll(after, 1000);
      if (page.length === 0) break;
      events += page.length;
      after = page[page.length - 1].position;
    }
    const readRate = events / seconds(start);
    const replay = await replayReadModels({ store, read });

    const app = createApp({
      logger: pino({ level: 'silent' }),
      authenticate: createAuthenticator({ store, clock: systemClock }),
      limiter: new RateLimiterMemory({ points: 1e9, duration: 60 }),
      maxRequestBytes: 1 << 20,
      schemas: loadSchemas(),
      read,
      store,
    });
    const server = createServer(app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    // Warm up (JIT, caches) so the baseline is not measured cold.
    for (const paths of [['/status'], [`/jobs/${jobIds[0]}`], ['/jobs?limit=20']]) await load(url, drive.token, paths);
    const statusRate = await load(url, drive.token, ['/status']);
    const jobRate = await load(
      url,
      drive.token,
      jobIds.slice(0, 500).map((id) => `/jobs/${id}`),
    );
    const listRate = await load(url, drive.token, ['/jobs?limit=20']);
    server.close();

    const row = (name: string, value: number, unit: string, baseline: number, baseName: string) =>
      console.log(
        `${name.padEnd(34)} ${Math.round(value).toString().padStart(9)} ${unit.padEnd(8)} ratio ${(value / baseline).toFixed(2)} of ${baseName}`,
      );
    console.log(`events: ${events} (${JOBS} jobs × 4), requests per HTTP figure: ${REQUESTS}, concurrency ${CONCURRENCY}\n`);
    row('$all read (baseline)', readRate, 'events/s', readRate, 'itself');
    row('replay into the jobs read model', replay.eventsPerSecond, 'events/s', readRate, '$all read');
    row('GET /status (baseline: auth only)', statusRate, 'req/s', statusRate, 'itself');
    row('GET /jobs/{id}', jobRate, 'req/s', statusRate, 'GET /status');
    row('GET /jobs?limit=20', listRate, 'req/s', statusRate, 'GET /status');
  } finally {
    await read.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
