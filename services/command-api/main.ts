import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { openEventStore, openReadStore } from '../../lib/adapters/from-config';
import { httpCommon } from '../../lib/adapters/http-common';
import { createBalances } from '../../lib/app/balances';
import { createMetrics } from '../../lib/observability/metrics';
import { runService } from '../../lib/run-service';
import { start } from './index';
import { commandDeps } from './from-config';

/** Composition root of command-api (the read store backs the shared rate limiter and balance checks). */
runService('command-api', async (config, logger) => {
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  const service = await start({
    ...httpCommon(config, logger, store, readSide),
    metrics: createMetrics(),
    balance: createBalances({ store, clock: systemClock, ids: randomIds }),
    port: config.port,
    maxConnections: config.maxConnections,
    ...commandDeps(config, store),
  });
  return async () => {
    await service.stop();
    await readSide.close();
    await store.close();
  };
});
