import type { Logger } from 'pino';
import { openMedia } from '../../lib/adapters/from-config';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import type { Config } from '../../lib/config';
import type { EventLog } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { ProcessorsDeps } from './index';

/** The processors' dependencies from configuration, shared by main.ts and the all-in-one serve. */
export const processorsDeps = (config: Config, logger: Logger, store: EventStore, log: EventLog): ProcessorsDeps => ({
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
