import { openBlobStore, openUrlRefusal, type ReadSide } from '../../lib/adapters/from-config';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import type { Config } from '../../lib/config';
import type { Metrics } from '../../lib/observability/metrics';
import type { EventStore } from '../../lib/ports/event-store';
import type { QueryApiDeps } from './app';

/**
 * What query-api needs beyond the shared HTTP pieces, from configuration (main.ts and the
 * all-in-one server). The read side's caches and the app's are reported in `metrics`.
 */
export function queryDeps(
  config: Config,
  readSide: ReadSide,
  store: EventStore,
  metrics: Pick<Metrics, 'watchCache'>,
): Pick<QueryApiDeps, 'read' | 'search' | 'blobs' | 'webUrl' | 'urlRefusal' | 'store' | 'clock' | 'ids' | 'watchCache'> {
  for (const [name, stats] of Object.entries(readSide.caches)) metrics.watchCache(name, stats);
  return {
    read: readSide.queries,
    search: readSide.search,
    blobs: openBlobStore(config),
    webUrl: config.webUrl,
    urlRefusal: openUrlRefusal(config),
    store,
    clock: systemClock,
    ids: randomIds,
    watchCache: metrics.watchCache,
  };
}
