import type { Logger } from 'pino';
import type { EventLog, LogSubscription } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { prepareModels, projectEvent, PROJECTIONS_GROUP, secondsSince, staleModels } from '../../lib/app/read-models';
import { READ_MODELS } from './read-models';
import { replayReadModels, SEARCH } from './replay';
import { indexEvent } from './search-indexer';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { SearchIndex } from '../../lib/ports/search-index';

/** Keeps the read models up to date from the event log (consumer group `projections`). */

export { PROJECTIONS_GROUP };

export type ProjectorDeps = {
  log: EventLog;
  read: ReadStore;
  store: EventStore;
  logger: Logger;
  concurrency?: number;
  onFatal?: (err: Error) => void;
  /** The search index and the blobs its transcripts come from; without them nothing is indexed. */
  search?: { index: SearchIndex; blobs: BlobStore };
  /** Told how long after its append each event was applied, per read model (`projection_lag_seconds`). */
  observeLag?: (model: string, seconds: number) => void;
};

export async function startProjector(deps: ProjectorDeps): Promise<LogSubscription> {
  await prepareModels(deps.read, READ_MODELS);
  const logger = deps.logger.child({ component: 'projector' });
  await rebuildStale(deps, logger);
  return deps.log.subscribe(
    PROJECTIONS_GROUP,
    async (event) => {
      await projectEvent(deps, READ_MODELS, event);
      if (deps.search) {
        await indexEvent({ read: deps.read, search: deps.search.index, blobs: deps.search.blobs }, event);
        deps.observeLag?.(SEARCH.name, secondsSince(event.createdAt));
      }
      logger.debug({ event_id: event.id, type: event.type, stream: event.streamId }, 'projected');
    },
    { concurrency: deps.concurrency ?? 4, onFatal: deps.onFatal },
  );
}

/**
 * The group's checkpoint lives with the log, not with the read models: a read store that was
 * emptied or replaced, or a model that is new or changed, would otherwise stay empty (or stale)
 * while the group carries on past everything. Those models are rebuilt from the store first (the
 * group's redeliveries are then duplicates).
 */
async function rebuildStale(deps: ProjectorDeps, logger: Logger): Promise<void> {
  const stale = await staleModels(deps.read, READ_MODELS);
  const searchStale = deps.search !== undefined && (await staleModels(deps.read, [SEARCH])).length > 0;
  if (stale.length === 0 && !searchStale) return;
  const names = [...stale.map((m) => m.name), ...(searchStale ? [SEARCH.name] : [])];
  logger.warn({ models: names }, 'read models missing or at another version: rebuilding them from the event store');
  const r = await replayReadModels({ store: deps.store, read: deps.read, search: searchStale ? deps.search : undefined }, stale);
  logger.info({ models: names, events: r.events, seconds: r.seconds }, 'read models rebuilt');
}
