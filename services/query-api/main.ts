import { openConsumerSide } from '../../lib/adapters/consumer-side';
import { httpCommon } from '../../lib/adapters/http-common';
import { readYourWrites, trackAppends } from '../../lib/app/consistency';
import { recordProjectionMarks, sharedSessionPositions, sharedWatermark } from '../../lib/app/shared-consistency';
import { createMetrics } from '../../lib/observability/metrics';
import { projectorObservers, watchLag } from '../../lib/observability/wiring';
import { exitOnFatal, runService } from '../../lib/run-service';
import { queryDeps } from './from-config';
import { start } from './index';
import { PROJECTIONS_GROUP } from './projector';

/**
 * Composition root of query-api and its projector. Read-your-writes across replicas
 * (lib/app/shared-consistency.ts): the projector member records the marks its partitions reach,
 * reads wait on the least of every member's, and on the write positions command-api recorded.
 */
runService('query-api', async (config, logger) => {
  const metrics = createMetrics();
  // The embedded read store's snapshot starts again as the watermark moves: a read that waited
  // for it sees what it waited for. The watermark reads that store, so it comes second.
  const later: { watermark?: ReturnType<typeof sharedWatermark> } = {};
  const consumers = await openConsumerSide(config, logger, metrics, { moves: () => later.watermark?.moves() ?? 0 });
  const { readSide, log } = consumers;
  const watermark = (later.watermark = sharedWatermark({ queries: readSide.read, group: PROJECTIONS_GROUP, log: logger }));
  // The partner import page writes through it.
  const store = trackAppends(consumers.store);
  const hooks = readYourWrites({
    sessions: sharedSessionPositions(readSide.read, logger),
    watermark,
    lastAppended: store.lastAppended,
    observe: (outcome, seconds) => metrics.readFenceWait.observe({ outcome }, seconds),
  });
  const common = httpCommon(config, logger, store, readSide);
  const service = await start({
    ...common,
    metrics,
    port: config.port,
    ...queryDeps(config, readSide, store, metrics, logger),
    models: readSide.read,
    log,
    consistency: { role: 'read', hooks },
    watermark,
    onFatal: exitOnFatal(logger),
    ...projectorObservers(metrics),
  });
  const marks = recordProjectionMarks({ store: readSide.read, group: PROJECTIONS_GROUP, subscription: service.projector, log: logger });
  const lag = watchLag(metrics, [service.projector]);
  return async () => {
    lag.stop();
    watermark.stop();
    await service.stop();
    marks.stop();
    await marks.idle();
    await consumers.close();
  };
});
