import { createServer } from 'node:http';
import { openEventLog, openEventStore, openLogProducer, openReadStore, openUrlRefusal } from '../lib/adapters/from-config';
import { httpCommon } from '../lib/adapters/http-common';
import { createReadStoreCheckpoints } from '../lib/adapters/read-store-checkpoints';
import { randomIds, systemClock } from '../lib/adapters/system/clock';
import { routeByMethod } from '../lib/http/gateway';
import { runService } from '../lib/run-service';
import { createApp as createCommandApp } from '../services/command-api/app';
import * as processors from '../services/processors';
import { processorsDeps } from '../services/processors/from-config';
import { createApp as createQueryApp } from '../services/query-api/app';
import { startProjector } from '../services/query-api/projector';
import * as relay from '../services/relay';

/**
 * All-in-one composition root (`npm start`): command-api, query-api (with its projector) and
 * processors in one process, on one port, on the embedded adapters unless servers are configured
 * (then the relay runs here too). Stops in reverse order of dependence.
 */
runService('serve', async (config, logger) => {
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
  stops.unshift(() => projector.close());
  const proc = await processors.start(processorsDeps(config, logger, store, log));
  stops.unshift(proc.stop);

  const common = httpCommon(config, logger, store, readSide);
  const commandApp = createCommandApp({
    ...common,
    store,
    clock: systemClock,
    ids: randomIds,
    webUrl: config.webUrl,
    urlRefusal: openUrlRefusal(config),
  });
  const queryApp = createQueryApp({ ...common, read: readSide.read, store });
  const server = createServer(routeByMethod(commandApp, queryApp));
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  logger.info(
    { port: config.port, base_url: config.baseUrl, mode: config.kafka ? 'distributed' : 'embedded' },
    'media project service listening',
  );

  return async () => {
    await new Promise<void>((resolve) => (server.close(() => resolve()), server.closeIdleConnections()));
    for (const stop of stops) await stop().catch((err) => logger.error({ err }, 'error while stopping'));
    await log.close();
    await readSide.close();
    await store.close();
  };
});
