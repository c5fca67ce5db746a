import { openEventLog, openEventStore, openReadStore } from '../../lib/adapters/from-config';
import { httpCommon } from '../../lib/adapters/http-common';
import { runService } from '../../lib/run-service';
import { start } from './index';

/** Composition root of query-api and its projector. */
runService('query-api', async (config, logger) => {
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  const log = await openEventLog(config, store, logger);
  const service = await start({ ...httpCommon(config, logger, store, readSide), port: config.port, read: readSide.read, store, log });
  return async () => {
    await service.stop();
    await log.close();
    await readSide.close();
    await store.close();
  };
});
