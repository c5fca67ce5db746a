import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createSqliteDeadLetterStore } from '../lib/adapters/embedded/dead-letters';
import { createEmbeddedEventLog } from '../lib/adapters/embedded/event-log';
import { createSqliteEventStore } from '../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../lib/adapters/embedded/read-store';
import { createOutboundFetcher } from '../lib/adapters/http/outbound-fetcher';
import { randomIds, systemClock } from '../lib/adapters/system/clock';
import { createSecretBox } from '../lib/adapters/system/secret-box';
import { createDrive } from '../lib/app/admin';
import type { NewEvent } from '../lib/ports/event-store';
import { startProjector } from '../services/query-api/projector';
import { DELIVERIES } from '../lib/read-models/deliveries';
import * as webhooks from '../services/webhook-dispatcher';

/**
 * Webhook deliveries per second to a receiver on loopback that answers 204 at once, in its own
 * process (a receiver in this process would share the event loop it measures). The dispatcher
 * runs here on embedded stores, with the projector keeping its read model: from the stopped
 * jobs in the log to the last acknowledged delivery.
 */

export type WebhookFigures = { deliveries: number; seconds: number; perSecond: number };

const RECEIVER = `
const http = require('node:http');
let n = 0;
const server = http.createServer((req, res) => { req.resume(); req.on('end', () => { n++; res.writeHead(204).end(); }); });
server.listen(0, '127.0.0.1', () => process.stdout.write('ready ' + server.address().port + '\\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

export async function measureWebhooks(count = Number(process.env.BENCH_WEBHOOKS ?? 2000)): Promise<WebhookFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
  const logger = pino({ level: 'silent' });
  const receiver = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) =>
    receiver.stdout!.once('data', (d: Buffer) => resolve(Number(/ready (\d+)/.exec(String(d))![1]))),
  );
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite'), pollIntervalMs: 20 });
  const read = createSqliteReadStore({ path: join(dir, 'read.sqlite') });
  const deadLetters = createSqliteDeadLetterStore({ path: join(dir, 'events.sqlite') });
  const log = createEmbeddedEventLog({ store, logger, deadLetters });
  try {
    // Sealed as the services seal it: each delivery opens the drive's secret.
    const secrets = createSecretBox(`${randomUUID()}${randomUUID()}`);
    const drive = await createDrive({ store, clock: systemClock, ids: randomIds, secrets }, { name: 'Bench' });
    for (let i = 0; i < count; i += 250) {
      const chunk = Array.from({ length: Math.min(250, count - i) }, () => stoppedJob(drive.drive_id, `http://127.0.0.1:${port}/hook`));
      await Promise.all(chunk.map((j) => store.append(j.streamId, j.events, 'no_stream')));
    }
    const projector = await startProjector({ log, read, store, logger });
    const started = process.hrtime.bigint();
    const dispatcher = await webhooks.start({
      store,
      read,
      log,
      logger,
      clock: systemClock,
      ids: randomIds,
      fetcher: createOutboundFetcher({ allowlist: ['127.0.0.1'] }),
      workerId: 'bench',
      secrets,
      scheduleSeconds: [1],
      pollMs: 50,
      perDrive: 16,
      perHost: 16,
    });
    for (;;) {
      const delivered = (await read.find(DELIVERIES, { state: 'delivered' })).length;
      if (delivered >= count) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await dispatcher.stop();
    await projector.close();
    return { deliveries: count, seconds, perSecond: Math.round(count / seconds) };
  } finally {
    receiver.kill('SIGTERM');
    await log.close();
    deadLetters.close();
    await read.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function stoppedJob(driveId: string, callbackUrl: string): { streamId: string; events: NewEvent[] } {
  const jobId = `project-media-import-${randomUUID()}`;
  const projectId = randomUUID();
  const at = new Date().toISOString();
  const event = (type: string, data: Record<string, unknown>): NewEvent => ({
    id: randomIds.uuidv7(),
    type,
    data: { job_id: jobId, ...data },
    metadata: { partition_key: projectId },
  });
  return {
    streamId: `job-${jobId}`,
    events: [
      event('JobQueued', {
        job_type: 'import/project_media',
        drive_id: driveId,
        project_id: projectId,
        project_url: `http://w/${projectId}`,
        created_by: 'u',
        callback_url: callbackUrl,
        request: { media: [], compositions: [] },
        created_at: at,
      }),
      event('JobStarted', { attempt: 1, started_at: at }),
      event('JobStopped', {
        result: { status: 'success', media_status: {}, media_seconds_used: 0, created_compositions: [] },
        project_url: null,
        stopped_at: at,
      }),
    ],
  };
}

if (require.main === module) {
  measureWebhooks().then(
    (f) => console.log(JSON.stringify(f)),
    (err) => (console.error(err), process.exit(1)),
  );
}
