import type { EventStore, StoredEvent } from '../ports/event-store';
import type { Doc, ReadStore } from '../ports/read-store';

/**
 * Applies one event to the read document of its stream (STYLE §9). The document remembers the
 * revision of the last event applied, so a redelivered event changes nothing, and a write only
 * lands if nobody else moved the document meanwhile. A gap (an event missed) is healed by
 * folding the stream from the store.
 */

export type DocEvolve = (doc: Doc | null, event: StoredEvent) => Doc | null;

export type ApplyOutcome = 'applied' | 'duplicate' | 'rebuilt' | 'ignored';

export async function applyToDocument(
  deps: { read: ReadStore; store: EventStore },
  collection: string,
  id: string,
  event: StoredEvent,
  evolve: DocEvolve,
): Promise<ApplyOutcome> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const current = await deps.read.get(collection, id);
    const rev = current?._rev ?? -1;
    if (event.revision <= rev) return 'duplicate';
    const gap = event.revision > rev + 1;
    const next = gap ? await foldUpTo(deps.store, event, evolve) : evolve(current, event);
    if (next === null) return 'ignored';
    const outcome = await deps.read.put(
      collection,
      { ...next, _id: id, _rev: gap ? next._rev : event.revision },
      current ? current._rev : null,
    );
    if (outcome === 'written') return gap ? 'rebuilt' : 'applied';
  }
  throw new Error(`could not apply ${event.type} ${event.id} to ${collection}/${id}: too much contention`);
}

async function foldUpTo(store: EventStore, event: StoredEvent, evolve: DocEvolve): Promise<Doc | null> {
  const events = (await store.readStream(event.streamId)).filter((e) => e.revision <= event.revision);
  return foldDocument(events, evolve);
}

/** The document a stream's events make, from nothing (also used to answer before a projection caught up). */
export function foldDocument(events: readonly StoredEvent[], evolve: DocEvolve): Doc | null {
  let doc: Doc | null = null;
  for (const e of events) {
    const next = evolve(doc, e);
    doc = next ? { ...next, _rev: e.revision } : doc;
  }
  return doc;
}
