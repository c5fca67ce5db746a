import { openDeadLetters, openEventLog, openEventStore, openReadStore } from '../../lib/adapters/from-config';
import { httpCommon } from '../../lib/adapters/http-common';
import { createMetrics } from '../../lib/observability/metrics';
import { countingDeadLetters, watchLag } from '../../lib/observability/wiring';
import { runService } from '../../lib/run-service';
import { start } from './index';

/** Composition root of query-api and its projector. */
runService('query-api', async (config, logger) => {
  const metrics = createMetrics();
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  const deadLetters = countingDeadLetters(openDeadLetters(config, readSide, logger), metrics);
  const log = await openEventLog(config, store, logger, deadLetters);
  const common = httpCommon(config, logger, store, readSide);
  const onFatal = (err: Error) => {
    logger.fatal({ err }, 'the projector can no longer consume; exiting so that it is restarted');
    setTimeout(() => process.exit(1), 100).unref();
  };
  const service = await start({ ...common, metrics, port: config.port, read: readSide.read, store, log, onFatal });
  const lag = watchLag(metrics, [service.projector]);
  return async () => {
    lag.stop();
    await service.stop();
    await log.close();
    await deadLetters.close();
    await readSide.close();
    await store.close();
  };
});
