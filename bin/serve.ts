import { readStoreSnapshots } from '../lib/app/snapshots';
import { randomIds, systemClock } from '../lib/adapters/system/clock';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { eventsWriterSocketPath, openEventStore, openMedia, openReadStore } from '../lib/adapters/from-config';
import type { SqliteEventStore } from '../lib/adapters/embedded/event-store';
import { createSessionPositions, createWatermark, readYourWrites, trackAppends } from '../lib/app/consistency';
import type { EventStore } from '../lib/ports/event-store';
import { PROJECTIONS_GROUP } from '../services/query-api/projector';
import { httpCommon } from '../lib/adapters/http-common';
import { createBalances } from '../lib/app/balances';
import { ConfigError } from '../lib/config';
import { routeByMethod } from '../lib/http/gateway';
import { createHttpServer } from '../lib/http/listen';
import { createMetrics } from '../lib/observability/metrics';
import { timedAppends, withChildMetrics, type ChildSeries } from '../lib/observability/wiring';
import { runService } from '../lib/run-service';
import { supervise, type Supervised } from '../lib/supervise';
import { createApp as createCommandApp } from '../services/command-api/app';
import { createApp as createQueryApp } from '../services/query-api/app';
import { queryDeps } from '../services/query-api/from-config';
import { commandDeps } from '../services/command-api/from-config';

/**
 * All-in-one composition root (`npm start`): command-api and query-api on one port in this
 * process, and job work, projections and (with Kafka) the relay in a supervised child process
 * (bin/worker), so a fault in job work never stops the APIs. The port is taken before the worker
 * starts: a port in use stops start-up with one line, not after jobs began.
 */
runService('serve', async (config, logger) => {
  // Checked here too, so a transcriber that cannot run stops start-up rather than the worker's restarts.
  openMedia(config);
  const metrics = createMetrics();
  // Embedded, this process's writer thread is the events file's one writer: the workers send it
  // their batches (lib/adapters/embedded/event-writer-socket.ts) rather than wait on its lock.
  // What the jobs worker appends wakes the projector from here, as the commit returns, not from
  // the worker (at nice 10, its event loop may be busy).
  const writerSocket = config.esdbUrl ? undefined : eventsWriterSocketPath(config);
  let worker: Workers | null = null;
  const store = timedAppends(
    openEventStore(config, {
      serveWriters: writerSocket ? { socketPath: writerSocket, onAppended: () => worker?.appendedByJobs() } : undefined,
    }),
    metrics,
  );
  if ('writersListening' in store) {
    await store.writersListening().catch((err: Error) => {
      throw new ConfigError(`DATA_DIR: ${err.message}; is another \`npm start\` running on this folder?`);
    });
  }
  // Read-your-writes (lib/app/consistency.ts): the worker's projector reports its watermark; the
  // query API waits on it for a token's writes and a final job's effects. With Kafka the
  // projector learns it from the marks the relay writes (lib/adapters/kafka/marks.ts): its one
  // member owns every partition.
  const watermark = createWatermark(config.kafka ? null : projectedSoFar(store));
  const readSide = await openReadStore(config, { moves: watermark.moves });
  const common = httpCommon(config, logger, store, readSide);
  // Each append wakes the worker's consumers at once (they would see it at their next poll).
  const commandStore = trackAppends(store, () => worker?.appended());
  const hooks = readYourWrites({
    sessions: createSessionPositions(),
    watermark,
    lastAppended: commandStore.lastAppended,
    observe: (outcome, seconds) => metrics.readFenceWait.observe({ outcome }, seconds),
  });
  const shared = {
    ...common,
    metrics: withChildMetrics(metrics, () => worker?.metrics() ?? Promise.resolve([])),
    ready: async () => {
      await common.ready();
      const down = worker ? worker.down() : ['job'];
      if (down.length > 0) throw new Error(`the ${down.join(' and ')} worker is not running (it is being restarted)`);
    },
  };
  const command = commandDeps(config, commandStore, { queries: readSide.queries, logger, metrics });
  const commandApp = createCommandApp({
    ...shared,
    ...command,
    balance: createBalances({ store, clock: systemClock, ids: randomIds, snapshots: readStoreSnapshots(readSide.read, logger) }),
    consistency: { role: 'write', hooks },
  });
  const queryApp = createQueryApp({
    ...shared,
    // The tracked store: the partner import page writes through it too.
    // One admission for both apps: the partner page's imports and the API's count against one limit, read once.
    ...queryDeps(config, readSide, commandStore, metrics, logger, command.admission),
    consistency: { role: 'read', hooks },
    watermark,
  });
  const server = createHttpServer(routeByMethod(commandApp, queryApp), { maxConnections: config.maxConnections });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new ConfigError(`PORT: ${config.port} is already in use by another process`) : err),
    );
    server.listen(config.port, () => resolve());
  });

  // Two children (bin/worker.ts): the projector, on its own so that reads after a write do not
  // wait behind job work, and the jobs (processors, webhooks, the relay). Both stable-named while
  // this process lives, so a restarted worker takes its predecessor's claims over at once.
  const workerEnv = {
    ...process.env,
    WORKER_ID: config.workerId ?? `${hostname()}:serve:${process.pid}`,
    ...(writerSocket ? { EVENTS_WRITER_SOCKET: writerSocket } : {}),
  };
  const modulePath = join(__dirname, `worker${__filename.endsWith('.ts') ? '.ts' : '.js'}`);
  // Job work runs at a lower priority (nice 10): when the cores are busy, accepting and reading
  // (this process) and projecting (the reads wait on it) go first, and imports take what is left.
  const jobs = supervise({
    modulePath,
    args: ['jobs'],
    name: 'jobs',
    env: workerEnv,
    logger,
    nice: JOBS_NICE,
  });
  const projector: Supervised = supervise({
    modulePath,
    args: ['projector'],
    name: 'projector',
    env: workerEnv,
    logger,
    onProjected: (position) => {
      watermark.advance(position);
      jobs.projected(position);
    },
  });
  worker = both(projector, jobs);
  logger.info(
    { port: config.port, base_url: config.baseUrl, mode: config.kafka ? 'distributed' : 'embedded' },
    'media project service listening',
  );

  return async () => {
    // Open job event streams would hold the close until their jobs end.
    queryApp.jobEvents.close();
    await new Promise<void>((resolve) => (server.close(() => resolve()), server.closeIdleConnections()));
    await worker?.stop();
    await readSide.close();
    await store.close();
  };
});

/** What the projector had saved as done when it last checkpointed: projected for sure. */
function projectedSoFar(store: EventStore | SqliteEventStore): bigint | null {
  if (!('loadCheckpoint' in store)) return null;
  const saved = store.loadCheckpoint(PROJECTIONS_GROUP);
  return saved === null ? null : BigInt(saved);
}

const JOBS_NICE = 10;

type Workers = {
  appended(): void;
  appendedByJobs(): void;
  down(): string[];
  metrics(): Promise<(ChildSeries | null)[]>;
  stop(): Promise<void>;
};

/** The two children as one: appends wake both, metrics come from both, and both stop. */
function both(projector: Supervised, jobs: Supervised): Workers {
  const named = [
    ['projector', projector],
    ['jobs', jobs],
  ] as const;
  return {
    appended: () => (projector.appended(), jobs.appended()),
    // The projector would see them at its next poll of the store.
    appendedByJobs: () => projector.appended(),
    down: () => named.filter(([, w]) => !w.ready()).map(([name]) => name),
    // One list of series per child that answers.
    metrics: async () =>
      Promise.all(
        named.map(([name, w]) =>
          w.request('metrics').then(
            (series) => ({ process: name, series }),
            () => null,
          ),
        ),
      ),
    stop: async () => void (await Promise.all([jobs.stop(), projector.stop()])),
  };
}
