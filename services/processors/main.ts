import { openEventLog, openEventStore } from '../../lib/adapters/from-config';
import { runService } from '../../lib/run-service';
import { processorsDeps } from './from-config';
import { start } from './index';

/** Composition root of the processors (scale out: instances share the consumer group). */
runService('processors', async (config, logger) => {
  const store = openEventStore(config);
  const log = await openEventLog(config, store, logger);
  const service = await start(processorsDeps(config, logger, store, log));
  return async () => {
    await service.stop();
    await log.close();
    await store.close();
  };
});
