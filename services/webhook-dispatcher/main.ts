import { openConsumerSide } from '../../lib/adapters/consumer-side';
import { PROJECTIONS_GROUP } from '../../lib/app/read-models';
import { sharedWatermark } from '../../lib/app/shared-consistency';
import { createMetrics } from '../../lib/observability/metrics';
import { exitOnFatal, runService } from '../../lib/run-service';
import { dispatcherDeps } from './from-config';
import { start } from './index';

/**
 * Composition root of the webhook dispatcher. Scales out: replicas share due deliveries through
 * claims. A stopped job's document goes out once the projector group (query-api's members) has
 * projected its effects, as their recorded marks say (lib/app/shared-consistency.ts).
 */
runService('webhook-dispatcher', async (config, logger) => {
  const consumers = await openConsumerSide(config, logger, createMetrics());
  const { store, readSide, log } = consumers;
  const projected = sharedWatermark({ queries: readSide.read, group: PROJECTIONS_GROUP, log: logger });
  const dispatcher = await start(
    dispatcherDeps(config, logger, { store, read: readSide.read, log }, { onFatal: exitOnFatal(logger), projected }),
  );
  return async () => {
    projected.stop();
    await dispatcher.stop();
    await consumers.close();
  };
});
