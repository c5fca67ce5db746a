import { openEventLog, openEventStore, openMedia } from '../../lib/adapters/from-config';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { runService } from '../../lib/run-service';
import { start } from './index';

/** Composition root of the processors (scale out: instances share the consumer group). */
runService('processors', async (config, logger) => {
  const store = openEventStore(config);
  const log = await openEventLog(config, store, logger);
  const service = await start({
    ...openMedia(config),
    log,
    store,
    logger,
    clock: systemClock,
    ids: randomIds,
    webUrl: config.webUrl,
    mediaMaxBytes: config.mediaMaxBytes,
    downloadTimeoutMs: config.mediaDownloadTimeoutSeconds * 1000,
    concurrency: config.processorConcurrency,
  });
  return async () => {
    await service.stop();
    await log.close();
    await store.close();
  };
});
