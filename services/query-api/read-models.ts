import { CHARGE_INDEXES, CHARGES, projectCharge } from '../../lib/app/balance';
import { applyToDocument, applyToDocuments } from '../../lib/app/projection';
import { streamCategory } from '../../lib/domain/ids';
import type { EventStore, StoredEvent } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { evolveJobDoc, JOB_INDEXES, JOBS } from './jobs-projection';

/** The read models: what the projector and replay write, and how each event reaches them. */

/** Every collection the projector writes (replay clears them). */
export const READ_MODELS = [JOBS, CHARGES];

export async function prepareReadModels(read: ReadStore): Promise<void> {
  for (const fields of JOB_INDEXES) await read.ensureIndex(JOBS, fields);
  for (const fields of CHARGE_INDEXES) await read.ensureIndex(CHARGES, fields);
}

/** Applies one event to every read model it concerns. Idempotent. */
export async function project(deps: { read: ReadStore; store: EventStore }, event: StoredEvent): Promise<void> {
  switch (streamCategory(event.streamId)) {
    case 'job':
      if (event.type === 'MediaSecondsCharged') await projectCharge(deps.read, event);
      await applyToDocument(deps, JOBS, String(event.data.job_id), event, evolveJobDoc);
      return;
    default:
      return; // drives, tokens and projects have no read model yet
  }
}

/** Projects a page of `$all` (replay): each document's events are folded and written once. */
export async function projectMany(deps: { read: ReadStore; store: EventStore }, events: readonly StoredEvent[]): Promise<void> {
  const jobs = new Map<string, StoredEvent[]>();
  for (const e of events) {
    if (streamCategory(e.streamId) !== 'job') continue;
    if (e.type === 'MediaSecondsCharged') await projectCharge(deps.read, e);
    const id = String(e.data.job_id);
    const list = jobs.get(id);
    if (list) list.push(e);
    else jobs.set(id, [e]);
  }
  if (jobs.size > 0) await applyToDocuments(deps, JOBS, jobs, evolveJobDoc);
}
