import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createSqliteDeadLetterStore } from '../../lib/adapters/embedded/dead-letters';
import { createEmbeddedEventLog } from '../../lib/adapters/embedded/event-log';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { startProjector } from '../../services/query-api/projector';
import { JOBS } from '../../lib/read-models/jobs';
import { waitFor } from '../fixtures/wait';

/** An emptied or replaced read.sqlite: the projector's checkpoint lives with the events, not with it. */
describe('projector start-up on an emptied read store', () => {
  it('rebuilds the read models from the event store instead of silently listing nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rebuild-'));
    const logger = pino({ level: 'silent' });
    const store = createSqliteEventStore({ path: join(dir, 'events.sqlite'), pollIntervalMs: 20 });
    const deadLetters = createSqliteDeadLetterStore({ path: join(dir, 'events.sqlite') });
    const job = (id: string) => ({
      id: `${id}-queued`,
      type: 'JobQueued',
      data: {
        job_id: id,
        job_type: 'import/project_media',
        drive_id: 'd',
        project_id: 'p',
        project_url: 'http://w/p',
        created_by: 'u',
        callback_url: null,
        request: { media: [], compositions: [] },
        created_at: '2026-01-01T00:00:00.000Z',
      },
      metadata: { partition_key: 'p' },
    });
    try {
      await store.append('job-a', [job('a')], 'no_stream');
      // First life: the projector catches up and checkpoints past the job.
      let read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
      let log = createEmbeddedEventLog({ store, logger, deadLetters });
      let projector = await startProjector({ log, read, store, logger });
      await waitFor(async () => (await read.get(JOBS, 'a')) !== null, { timeoutMs: 5000 });
      await new Promise((r) => setTimeout(r, 300)); // let the checkpoint be saved
      await projector.close();
      await log.close();
      await read.close();

      // The operator empties the read store; the group's checkpoint (in events.sqlite) is past everything.
      rmSync(join(dir, 'read.sqlite'));
      rmSync(join(dir, 'read.sqlite-wal'), { force: true });
      rmSync(join(dir, 'read.sqlite-shm'), { force: true });
      read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
      log = createEmbeddedEventLog({ store, logger, deadLetters });
      projector = await startProjector({ log, read, store, logger });
      try {
        assert.ok(await read.get(JOBS, 'a'), 'the job is back without any new event');
      } finally {
        await projector.close();
        await log.close();
        await read.close();
      }
    } finally {
      deadLetters.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
