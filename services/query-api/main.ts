import { openConsumerSide } from '../../lib/adapters/consumer-side';
import { openBlobStore, openUrlRefusal } from '../../lib/adapters/from-config';
import { httpCommon } from '../../lib/adapters/http-common';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createMetrics } from '../../lib/observability/metrics';
import { watchLag } from '../../lib/observability/wiring';
import { exitOnFatal, runService } from '../../lib/run-service';
import { start } from './index';

/** Composition root of query-api and its projector. */
runService('query-api', async (config, logger) => {
  const metrics = createMetrics();
  const consumers = await openConsumerSide(config, logger, metrics);
  const { store, readSide, log } = consumers;
  const common = httpCommon(config, logger, store, readSide);
  const service = await start({
    ...common,
    metrics,
    port: config.port,
    read: readSide.read,
    search: readSide.search,
    blobs: openBlobStore(config),
    webUrl: config.webUrl,
    urlRefusal: openUrlRefusal(config),
    store,
    log,
    clock: systemClock,
    ids: randomIds,
    onFatal: exitOnFatal(logger),
  });
  const lag = watchLag(metrics, [service.projector]);
  return async () => {
    lag.stop();
    await service.stop();
    await consumers.close();
  };
});
