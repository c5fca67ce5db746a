import type { Logger } from 'pino';
import type { EventLog, LogSubscription } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { prepareModels, projectBatch, projectEvent, PROJECTIONS_GROUP, secondsSince, staleModels } from '../../lib/app/read-models';
import { turnBatches } from '../../lib/app/turn-batch';
import type { StoredEvent } from '../../lib/ports/event-store';
import { READ_MODELS } from './read-models';
import { flushReadSide, replayReadModels, SEARCH } from './replay';
import { indexEvent, indexPage, type IndexerDeps } from './search-indexer';
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
  /** Told how many events each batch applied together (`projector_batch_events`). */
  observeBatch?: (events: number) => void;
};

/**
 * Events are projected in batches: each is taken on at once (`settled` later), so the log hands
 * over everything it has read, and what arrived in one turn of the event loop is applied together
 * (`projectBatch`, one transaction for the read models and one for the search index, where each write
 * alone was a commit of its own). The busier the log, the larger the batch and the cheaper each
 * event. The log commits past an event, and the watermark readers wait on moves past it, only
 * once its batch is written. A batch that fails is applied event by event, so a poison event
 * fails alone (retried, then dead-lettered) and its neighbours are done.
 */
export async function startProjector(deps: ProjectorDeps): Promise<LogSubscription> {
  await prepareModels(deps.read, READ_MODELS);
  const logger = deps.logger.child({ component: 'projector' });
  await rebuildStale(deps, logger);
  const indexer = indexerOf(deps);
  const project = turnBatches<StoredEvent>(
    async (events) => {
      try {
        await projectTogether(deps, indexer, events);
      } catch (err) {
        logger.warn({ err, events: events.length }, 'a batch of events failed; applying them one by one');
        throw err;
      }
    },
    (event) => projectAlone(deps, indexer, event),
  );
  return deps.log.subscribe(
    PROJECTIONS_GROUP,
    async (event) => {
      const settled = project(event);
      if (logger.isLevelEnabled('debug'))
        void settled.then(
          () => logger.debug({ event_id: event.id, type: event.type, stream: event.streamId }, 'projected'),
          () => undefined,
        );
      return { settled };
    },
    { concurrency: deps.concurrency ?? 4, onFatal: deps.onFatal, beforeCheckpoint: () => flushReadSide(deps) }, // one fsync per file per checkpoint, not per batch
  );
}

/** The search indexer's share of the projector's dependencies; null without a search index. */
const indexerOf = (deps: ProjectorDeps): IndexerDeps | null =>
  deps.search ? { read: deps.read, search: deps.search.index, blobs: deps.search.blobs } : null;

async function projectTogether(deps: ProjectorDeps, indexer: IndexerDeps | null, events: readonly StoredEvent[]): Promise<void> {
  await projectBatch(deps, READ_MODELS, events);
  deps.observeBatch?.(events.length);
  if (!indexer) return;
  await indexPage(indexer, events);
  for (const event of events) deps.observeLag?.(SEARCH.name, secondsSince(event.createdAt));
}

async function projectAlone(deps: ProjectorDeps, indexer: IndexerDeps | null, event: StoredEvent): Promise<void> {
  await projectEvent(deps, READ_MODELS, event);
  if (!indexer) return;
  await indexEvent(indexer, event);
  deps.observeLag?.(SEARCH.name, secondsSince(event.createdAt));
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
