import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Metrics } from '../observability/metrics';
import { countingDeadLetters, timedAppends } from '../observability/wiring';
import { openDeadLetters, openEventLog, openEventStore, openReadStore } from './from-config';

/**
 * What every service that consumes the log opens (worker, processors, query-api): the event
 * store, the read store, the dead letters (counted into the metrics) and the log; closed in
 * reverse order. `moves`: as `openReadStore` takes it.
 */
export async function openConsumerSide(config: Config, logger: Logger, metrics: Metrics, options: { moves?: () => number } = {}) {
  const store = timedAppends(openEventStore(config), metrics);
  const readSide = await openReadStore(config, options);
  const deadLetters = countingDeadLetters(openDeadLetters(config, readSide, logger), metrics);
  const log = await openEventLog(config, store, logger, deadLetters);
  return {
    store,
    readSide,
    deadLetters,
    log,
    async close() {
      await log.close();
      await deadLetters.close();
      await readSide.close();
      await store.close();
    },
  };
}
