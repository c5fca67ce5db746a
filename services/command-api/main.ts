import { openEventStore, openReadStore, openUrlRefusal } from '../../lib/adapters/from-config';
import { httpCommon } from '../../lib/adapters/http-common';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { runService } from '../../lib/run-service';
import { start } from './index';

/** Composition root of command-api (the read store only backs the shared rate limiter). */
runService('command-api', async (config, logger) => {
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  const service = await start({
    ...httpCommon(config, logger, store, readSide),
    port: config.port,
    store,
    clock: systemClock,
    ids: randomIds,
    webUrl: config.webUrl,
    urlRefusal: openUrlRefusal(config),
  });
  return async () => {
    await service.stop();
    await readSide.close();
    await store.close();
  };
});
