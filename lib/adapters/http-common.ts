import type { Logger } from 'pino';
import { createAuthenticator } from '../app/tenancy';
import type { Config } from '../config';
import { loadSchemas } from '../http/schemas';
import type { EventStore } from '../ports/event-store';
import { openRateLimiter, type ReadSide } from './from-config';
import { systemClock } from './system/clock';

/** What both APIs' `createApp` need besides their own stores: auth, rate limit, schemas, health. */
export function httpCommon(config: Config, logger: Logger, store: EventStore, readSide: ReadSide) {
  return {
    logger,
    authenticate: createAuthenticator({ store, clock: systemClock }),
    limiter: openRateLimiter(config, readSide.mongo),
    maxRequestBytes: config.maxRequestBytes,
    schemas: loadSchemas(),
    health: async () => void (await Promise.all([store.readStream('health-check'), readSide.read.get('health', 'check')])),
  };
}
