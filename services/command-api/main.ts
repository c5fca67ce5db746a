import { readStoreSnapshots } from '../../lib/app/snapshots';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { openEventStore, openReadStore } from '../../lib/adapters/from-config';
import { httpCommon } from '../../lib/adapters/http-common';
import { createBalances } from '../../lib/app/balances';
import { createWatermark, readYourWrites, trackAppends } from '../../lib/app/consistency';
import { sharedSessionPositions } from '../../lib/app/shared-consistency';
import { createMetrics } from '../../lib/observability/metrics';
import { timedAppends } from '../../lib/observability/wiring';
import { runService } from '../../lib/run-service';
import { start } from './index';
import { commandDeps } from './from-config';

/**
 * Composition root of command-api (the read store backs the shared rate limiter and balance
 * checks). Each 2xx of a command records its store position for the token in the read store
 * before it goes out, where query-api replicas read it (lib/app/shared-consistency.ts).
 */
runService('command-api', async (config, logger) => {
  const metrics = createMetrics();
  const store = trackAppends(timedAppends(openEventStore(config), metrics));
  const readSide = await openReadStore(config);
  const hooks = readYourWrites({
    sessions: sharedSessionPositions(readSide.read, logger),
    // Never waited on here: this process only notes writes.
    watermark: createWatermark(),
    lastAppended: store.lastAppended,
  });
  const service = await start({
    ...httpCommon(config, logger, store, readSide),
    metrics,
    balance: createBalances({ store, clock: systemClock, ids: randomIds, snapshots: readStoreSnapshots(readSide.read, logger) }),
    port: config.port,
    maxConnections: config.maxConnections,
    ...commandDeps(config, store, { queries: readSide.queries, logger, metrics }),
    consistency: { role: 'write', hooks },
  });
  return async () => {
    await service.stop();
    await readSide.close();
    await store.close();
  };
});
