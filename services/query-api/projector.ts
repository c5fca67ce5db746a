import type { Logger } from 'pino';
import { applyManyToDocument, applyToDocument } from '../../lib/app/projection';
import { streamCategory } from '../../lib/domain/ids';
import type { EventLog } from '../../lib/ports/event-log';
import type { EventStore, StoredEvent, Subscription } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { evolveJobDoc, JOB_INDEXES, JOBS } from './jobs-projection';

/** Keeps the read models up to date from the event log (consumer group `projections`). */

export const PROJECTIONS_GROUP = 'projections';

export type ProjectorDeps = { log: EventLog; read: ReadStore; store: EventStore; logger: Logger; concurrency?: number };

export async function prepareReadModels(read: ReadStore): Promise<void> {
  for (const fields of JOB_INDEXES) await read.ensureIndex(JOBS, fields);
}

/** Applies one event to every read model it concerns. Idempotent. */
export async function project(deps: Pick<ProjectorDeps, 'read' | 'store'>, event: StoredEvent): Promise<void> {
  switch (streamCategory(event.streamId)) {
    case 'job':
      await applyToDocument(deps, JOBS, String(event.data.job_id), event, evolveJobDoc);
      return;
    default:
      return; // drives, tokens and projects have no read model yet
  }
}

/** Projects a page of `$all` (replay): each document's events are folded and written once. */
export async function projectMany(deps: Pick<ProjectorDeps, 'read' | 'store'>, events: readonly StoredEvent[]): Promise<void> {
  const jobs = new Map<string, StoredEvent[]>();
  for (const e of events) {
    if (streamCategory(e.streamId) !== 'job') continue;
    const id = String(e.data.job_id);
    jobs.set(id, [...(jobs.get(id) ?? []), e]);
  }
  for (const [id, docEvents] of jobs) await applyManyToDocument(deps, JOBS, id, docEvents, evolveJobDoc);
}

export async function startProjector(deps: ProjectorDeps): Promise<Subscription> {
  await prepareReadModels(deps.read);
  const logger = deps.logger.child({ component: 'projector' });
  return deps.log.subscribe(
    PROJECTIONS_GROUP,
    async (event) => {
      await project(deps, event);
      logger.debug({ event_id: event.id, type: event.type, stream: event.streamId }, 'projected');
    },
    { concurrency: deps.concurrency ?? 4 },
  );
}
