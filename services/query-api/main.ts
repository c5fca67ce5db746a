import { openConsumerSide } from '../../lib/adapters/consumer-side';
import { httpCommon } from '../../lib/adapters/http-common';
import { createMetrics } from '../../lib/observability/metrics';
import { watchLag } from '../../lib/observability/wiring';
import { exitOnFatal, runService } from '../../lib/run-service';
import { queryDeps } from './from-config';
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
    ...queryDeps(config, readSide, store, metrics),
    models: readSide.read,
    log,
    onFatal: exitOnFatal(logger),
  });
  const lag = watchLag(metrics, [service.projector]);
  return async () => {
    lag.stop();
    await service.stop();
    await consumers.close();
  };
});
