import { openAgentCatalog } from '../../lib/adapters/agent/catalog-file';
import {
  openBlobStore,
  openPublishedProjectsLimiter,
  openSigningSecret,
  openUrlRefusal,
  openWebFormLimiter,
  type ReadSide,
} from '../../lib/adapters/from-config';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { principalsByTokenId } from '../../lib/app/tenancy';
import { createWebSessions } from '../../lib/app/web-sessions';
import { readStoreSnapshots } from '../../lib/app/snapshots';
import { createAdmission, type Admission } from '../../lib/app/admission';
import type { Logger } from 'pino';
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
  metrics: Pick<Metrics, 'watchCache' | 'watchJobEvents' | 'watchAdmission'>,
  logger: Logger,
  /** The all-in-one server's command API's: one count per drive for both (the partner page admits jobs too). */
  admission?: Admission,
): Pick<
  QueryApiDeps,
  | 'read'
  | 'search'
  | 'blobs'
  | 'downloadSecret'
  | 'webUrl'
  | 'sessions'
  | 'formLimiter'
  | 'trustedProxyHops'
  | 'urlRefusal'
  | 'store'
  | 'clock'
  | 'ids'
  | 'watchCache'
  | 'agentCatalog'
  | 'jobEvents'
  | 'watchJobEvents'
  | 'published'
  | 'snapshots'
  | 'admission'
> {
  for (const [name, stats] of Object.entries(readSide.caches)) metrics.watchCache(name, stats);
  const admitting = admission ?? createAdmission({ queries: readSide.queries, limit: config.maxUnfinishedJobsPerDrive, log: logger });
  // Alone (query-api's own /metrics), its partner page's refusals are reported here.
  if (!admission) metrics.watchAdmission(admitting.stats);
  return {
    read: readSide.queries,
    snapshots: readStoreSnapshots(readSide.read, logger),
    admission: admitting,
    search: readSide.search,
    blobs: openBlobStore(config),
    downloadSecret: openSigningSecret(config),
    webUrl: config.webUrl,
    // Sessions are read from the store itself, not the API's snapshot: a sign-in works on the next request.
    sessions: createWebSessions({
      store: readSide.read,
      clock: systemClock,
      ttlSeconds: config.web.sessionTtlSeconds,
      principalOf: principalsByTokenId(store),
    }),
    formLimiter: openWebFormLimiter(config, readSide.mongo),
    trustedProxyHops: config.web.trustedProxyHops,
    urlRefusal: openUrlRefusal(config),
    store,
    clock: systemClock,
    ids: randomIds,
    watchCache: metrics.watchCache,
    agentCatalog: openAgentCatalog(config.agent),
    jobEvents: config.jobEvents,
    watchJobEvents: metrics.watchJobEvents,
    published: {
      limiter: openPublishedProjectsLimiter(config, readSide.mongo),
      baseUrl: config.baseUrl,
      downloadUrlTtlSeconds: config.downloadUrlTtlSeconds,
    },
  };
}
