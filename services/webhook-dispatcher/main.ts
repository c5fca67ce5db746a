import { openConsumerSide } from '../../lib/adapters/consumer-side';
import { createMetrics } from '../../lib/observability/metrics';
import { exitOnFatal, runService } from '../../lib/run-service';
import { dispatcherDeps } from './from-config';
import { start } from './index';

/** Composition root of the webhook dispatcher. Scales out: replicas share due deliveries through claims. */
runService('webhook-dispatcher', async (config, logger) => {
  const consumers = await openConsumerSide(config, logger, createMetrics());
  const { store, readSide, log } = consumers;
  const dispatcher = await start(dispatcherDeps(config, logger, { store, read: readSide.read, log }, { onFatal: exitOnFatal(logger) }));
  return async () => {
    await dispatcher.stop();
    await consumers.close();
  };
});
