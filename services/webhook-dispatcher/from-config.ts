import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { openSecretBox } from '../../lib/adapters/from-config';
import { createOutboundFetcher } from '../../lib/adapters/http/outbound-fetcher';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import type { Config } from '../../lib/config';
import type { EventLog } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { DEFAULT_RETRY_SCHEDULE, type DispatcherDeps } from './index';

/** The dispatcher's dependencies from configuration, shared by main.ts and the all-in-one worker. */
export const dispatcherDeps = (
  config: Config,
  logger: Logger,
  stores: { store: EventStore; read: ReadStore; log: EventLog },
  extra: { onFatal?: (err: Error) => void; projected?: DispatcherDeps['projected'] } = {},
): DispatcherDeps => ({
  ...stores,
  ...extra,
  logger,
  clock: systemClock,
  ids: randomIds,
  // Callbacks are checked against the outbound guard again at delivery, redirects not followed.
  fetcher: createOutboundFetcher({ allowlist: config.outboundAllowlist, userAgent: 'Servicebot/1.0 (webhooks)' }),
  workerId: config.workerId ?? `${hostname()}:${process.pid}`,
  scheduleSeconds: config.webhookRetryScheduleSeconds ?? DEFAULT_RETRY_SCHEDULE,
  secrets: openSecretBox(config),
});
