import { openBlobStore, openUrlRefusal, type ReadSide } from '../../lib/adapters/from-config';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import type { Config } from '../../lib/config';
import type { EventStore } from '../../lib/ports/event-store';
import type { QueryApiDeps } from './app';

/** What query-api needs beyond the shared HTTP pieces, from configuration (main.ts and the all-in-one server). */
export const queryDeps = (
  config: Config,
  readSide: ReadSide,
  store: EventStore,
): Pick<QueryApiDeps, 'read' | 'search' | 'blobs' | 'webUrl' | 'urlRefusal' | 'store' | 'clock' | 'ids'> => ({
  read: readSide.queries,
  search: readSide.search,
  blobs: openBlobStore(config),
  webUrl: config.webUrl,
  urlRefusal: openUrlRefusal(config),
  store,
  clock: systemClock,
  ids: randomIds,
});
