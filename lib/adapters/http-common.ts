import type { Logger } from 'pino';
import { createAuthenticator } from '../app/tenancy';
import type { Config } from '../config';
import { loadSchemas } from '../http/schemas';
import type { EventStore } from '../ports/event-store';
import { openRateLimiter, type ReadSide } from './from-config';
import { systemClock } from './system/clock';

/**
 * What both APIs' `createApp` need besides their own stores: auth, rate limit, schemas, and the
 * readiness check (the event store can be written, the read store answers).
 */
export function httpCommon(config: Config, logger: Logger, store: EventStore, readSide: ReadSide) {
  return {
    logger,
    authenticate: createAuthenticator({ store, clock: systemClock }),
    limiter: openRateLimiter(config, readSide.mongo),
    maxRequestBytes: config.maxRequestBytes,
    schemas: loadSchemas(),
    ready: async () => {
      const probe = (store as { probeWritable?: () => Promise<void> }).probeWritable;
      await Promise.all([probe ? probe.call(store) : store.readStream('health-check'), readSide.read.get('health', 'check')]);
    },
  };
}
