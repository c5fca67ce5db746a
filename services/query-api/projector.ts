import type { Logger } from 'pino';
import type { EventLog, LogSubscription } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { prepareReadModels, project } from './read-models';
import { replayReadModels } from './replay';

/** Keeps the read models up to date from the event log (consumer group `projections`). */

export const PROJECTIONS_GROUP = 'projections';

export type ProjectorDeps = {
  log: EventLog;
  read: ReadStore;
  store: EventStore;
  logger: Logger;
  concurrency?: number;
  onFatal?: (err: Error) => void;
};

export async function startProjector(deps: ProjectorDeps): Promise<LogSubscription> {
  await prepareReadModels(deps.read);
  const logger = deps.logger.child({ component: 'projector' });
  await rebuildIfEmptied(deps, logger);
  return deps.log.subscribe(
    PROJECTIONS_GROUP,
    async (event) => {
      await project(deps, event);
      logger.debug({ event_id: event.id, type: event.type, stream: event.streamId }, 'projected');
    },
    { concurrency: deps.concurrency ?? 4, onFatal: deps.onFatal },
  );
}

const MARKER = { collection: 'meta', id: 'read-models' };

/**
 * The group's checkpoint lives with the log, not with the read models: a read store that was
 * emptied or replaced would otherwise stay empty while the group carries on past everything.
 * A marker document tells a read store that was built from the log; without it, rebuild from
 * the store first (the group's redeliveries are then duplicates).
 */
async function rebuildIfEmptied(deps: ProjectorDeps, logger: Logger): Promise<void> {
  if (await deps.read.get(MARKER.collection, MARKER.id)) return;
  const head = await deps.store.readAll(null, 1);
  if (head.length > 0) {
    logger.warn('the read store has no marker (new, emptied or replaced): rebuilding the read models from the event store');
    const r = await replayReadModels({ store: deps.store, read: deps.read });
    logger.info({ events: r.events, seconds: r.seconds }, 'read models rebuilt');
  }
  await deps.read.put(MARKER.collection, { _id: MARKER.id, _rev: 0, created_at: new Date().toISOString() }, null);
}
