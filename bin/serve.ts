import { createServer } from 'node:http';
import { createAuthenticator } from '../lib/app/tenancy';
import { ConfigError, loadConfig } from '../lib/config';
import { openEventLog, openEventStore, openLogProducer, openMedia, openRateLimiter, openReadStore } from '../lib/adapters/from-config';
import { createReadStoreCheckpoints } from '../lib/adapters/read-store-checkpoints';
import { randomIds, systemClock } from '../lib/adapters/system/clock';
import { routeByMethod } from '../lib/http/gateway';
import { loadSchemas } from '../lib/http/schemas';
import { createLogger } from '../lib/logger';
import { createApp as createCommandApp } from '../services/command-api/app';
import * as processors from '../services/processors';
import { createApp as createQueryApp } from '../services/query-api/app';
import { startProjector } from '../services/query-api/projector';
import * as relay from '../services/relay';

/**
 * All-in-one composition root (`npm start`): command-api, query-api (with its projector) and
 * processors in one process, on one port, on the embedded adapters unless servers are configured
 * (then the relay runs here too).
 */
async function main() {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'serve');
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  const log = await openEventLog(config, store, logger);
  const stops: (() => Promise<void>)[] = [];

  if (config.kafka) {
    const producer = await openLogProducer(config, logger);
    const r = await relay.start({ store, producer, checkpoints: createReadStoreCheckpoints(readSide.read), logger });
    stops.push(r.stop, () => producer.close());
  }
  const projector = await startProjector({ log, read: readSide.read, store, logger });
  stops.push(() => projector.close());
  const proc = await processors.start({
    log,
    store,
    logger,
    clock: systemClock,
    ids: randomIds,
    webUrl: config.webUrl,
    mediaMaxBytes: config.mediaMaxBytes,
    downloadTimeoutMs: config.mediaDownloadTimeoutSeconds * 1000,
    concurrency: config.processorConcurrency,
    ...openMedia(config),
  });
  stops.unshift(proc.stop);

  const common = {
    logger,
    authenticate: createAuthenticator({ store, clock: systemClock }),
    limiter: openRateLimiter(config, readSide.mongo),
    maxRequestBytes: config.maxRequestBytes,
    schemas: loadSchemas(),
    health: async () => void (await store.readStream('health-check'), await readSide.read.get('jobs', 'health-check')),
  };
  const commandApp = createCommandApp({ ...common, store, clock: systemClock, ids: randomIds, webUrl: config.webUrl });
  const queryApp = createQueryApp({ ...common, read: readSide.read, store });
  const server = createServer(routeByMethod(commandApp, queryApp));
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  logger.info(
    { port: config.port, base_url: config.baseUrl, mode: config.kafka ? 'distributed' : 'embedded' },
    'media project service listening',
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    await new Promise<void>((resolve) => (server.close(() => resolve()), server.closeIdleConnections()));
    for (const stop of stops) await stop().catch((err) => logger.error({ err }, 'error while stopping'));
    await log.close();
    await readSide.close();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
