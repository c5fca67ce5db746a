import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteEventStore, type SqliteEventStore } from '../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../lib/adapters/embedded/read-store';
import { randomIds } from '../lib/adapters/system/clock';
import type { NewEvent } from '../lib/ports/event-store';
import { replayReadModels } from '../services/query-api/replay';

/**
 * Replay throughput over a seeded store of finished jobs (five events each, one of them the
 * charge of its file, which the drive's running total counts), against the floor
 * it stands on: reading `$all` page by page without projecting anything. No HTTP, no server:
 * replay is what `npm run replay` runs in its own process.
 */

export type ReplayFigures = { events: number; readPerSecond: number; replayPerSecond: number };

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;

/** A finished import as the service makes one: its job and project ids are time-ordered (v7). */
function finishedJob(i: number, driveId: string): { streamId: string; events: NewEvent[] } {
  const jobId = `project-media-import-${randomIds.uuidv7()}`;
  const metadata = { partition_key: `p${i % 100}` };
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
  const event = (type: string, data: Record<string, unknown>): NewEvent => ({
    id: randomIds.uuidv7(),
    type,
    data: { job_id: jobId, ...data },
    metadata,
  });
  return {
    streamId: `job-${jobId}`,
    events: [
      event('JobQueued', {
        job_type: 'import/project_media',
        drive_id: driveId,
        project_id: randomIds.uuidv7(),
        project_url: 'http://w/p',
        created_by: 'u',
        callback_url: null,
        request: {},
        created_at: at,
      }),
      event('JobStarted', { attempt: 1, started_at: at }),
      event('JobProgressed', { label: 'importing', percent: 50, at }),
      event('MediaSecondsCharged', { drive_id: driveId, ref: 'a.wav', seconds: 1, charged_at: at }),
      event('JobStopped', { result: { status: 'success', media_seconds_used: 1 }, project_url: null, stopped_at: at }),
    ],
  };
}

/** Appends concurrently in chunks, so the seeding itself rides on group commit. */
async function seed(store: SqliteEventStore, jobs: number): Promise<void> {
  const driveId = randomUUID();
  for (let i = 0; i < jobs; i += 250) {
    const chunk = Array.from({ length: Math.min(250, jobs - i) }, (_, k) => finishedJob(i + k, driveId));
    await Promise.all(chunk.map((job) => store.append(job.streamId, job.events, 'no_stream')));
  }
}

export async function measureReplay(jobs: number): Promise<ReplayFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-replay-'));
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
  const read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
  try {
    await seed(store, jobs);
    const start = process.hrtime.bigint();
    let events = 0;
    for (let after: string | null = null; ;) {
      const page = await store.readAll(after, 1000);
      if (page.length === 0) break;
      events += page.length;
      after = page[page.length - 1].position;
    }
    const readPerSecond = events / seconds(start);
    const replay = await replayReadModels({ store, read });
    return { events, readPerSecond, replayPerSecond: replay.eventsPerSecond };
  } finally {
    await read.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
