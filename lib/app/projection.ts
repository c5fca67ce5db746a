import type { EventStore, StoredEvent } from '../ports/event-store';
import type { CollectionWrite, Doc, ReadStore } from '../ports/read-store';

/**
 * Applies events to the read document of their stream (STYLE §9). The document remembers the
 * revision of the last event applied, so a redelivered event changes nothing, and a write only
 * lands if nobody else moved the document meanwhile. A gap (an event missed) is healed by
 * folding the stream from the store.
 */

export type DocEvolve = ((doc: Doc | null, event: StoredEvent) => Doc | null) & {
  /**
   * Where a model has it: the document after many events of its stream at once, each applied one
   * stamping `_rev` with its revision, as evolving them one by one does. For documents whose
   * evolve copies a list that grows with the stream (a project's files), which a fold of the
   * whole stream (a rebuild, a gap healed, an answer before the projection) would copy per event.
   */
  readonly many?: (doc: Doc | null, events: readonly StoredEvent[]) => Doc | null;
};

export type ApplyOutcome = 'applied' | 'duplicate' | 'rebuilt' | 'ignored';

type Deps = { read: ReadStore; store: EventStore };

export async function applyToDocument(
  deps: Deps,
  collection: string,
  id: string,
  event: StoredEvent,
  evolve: DocEvolve,
): Promise<ApplyOutcome> {
  return applyManyToDocument(deps, collection, id, [event], evolve);
}

/**
 * The same for several events of one stream in revision order (replay), written once: one read
 * and one compare-and-set write however many events there are.
 */
export async function applyManyToDocument(
  deps: Deps,
  collection: string,
  id: string,
  events: readonly StoredEvent[],
  evolve: DocEvolve,
): Promise<ApplyOutcome> {
  const last = events[events.length - 1];
  for (let attempt = 0; attempt < 10; attempt++) {
    const current = await deps.read.get(collection, id);
    const rev = current?._rev ?? -1;
    const fresh = events.filter((e) => e.revision > rev);
    if (fresh.length === 0) return 'duplicate';
    const gap = fresh[0].revision > rev + 1;
    const next = gap ? await foldUpTo(deps.store, last, evolve) : foldFrom(current, fresh, evolve);
    if (next === null) return 'ignored';
    const outcome = await deps.read.put(collection, { ...next, _id: id }, current ? current._rev : null);
    if (outcome === 'written') return gap ? 'rebuilt' : 'applied';
  }
  throw new Error(`could not apply ${last.type} ${last.id} to ${collection}/${id}: too much contention`);
}

/**
 * What applying events to many documents of one collection writes: each document's next
 * version (read once, its events folded), and the documents to heal one by one (a gap).
 */
export type DocumentPlan = {
  readonly collection: string;
  readonly byId: ReadonlyMap<string, readonly StoredEvent[]>;
  readonly evolve: DocEvolve;
  readonly writes: readonly CollectionWrite[];
  readonly gaps: readonly string[];
};

export async function planDocuments(
  deps: Deps,
  collection: string,
  byId: ReadonlyMap<string, readonly StoredEvent[]>,
  evolve: DocEvolve,
): Promise<DocumentPlan> {
  const current = new Map((await deps.read.getMany(collection, [...byId.keys()])).map((d) => [d._id, d]));
  const writes: CollectionWrite[] = [];
  const gaps: string[] = [];
  for (const [id, events] of byId) {
    const doc = current.get(id) ?? null;
    const fresh = events.filter((e) => e.revision > (doc?._rev ?? -1));
    if (fresh.length === 0) continue;
    if (fresh[0].revision > (doc?._rev ?? -1) + 1) {
      gaps.push(id); // healed from the store
      continue;
    }
    const next = foldFrom(doc, fresh, evolve);
    if (next) writes.push({ collection, doc: { ...next, _id: id }, expectedRev: doc ? doc._rev : null });
  }
  return { collection, byId, evolve, writes, gaps };
}

/**
 * Writes the plans' documents together (`putMany`: one transaction on SQLite; a single write
 * by itself, since a transaction around one write costs more than the write). A document that
 * met a gap or lost a race falls back to `applyManyToDocument`, so the outcome is the same as
 * applying the events one by one.
 */
export async function writePlans(deps: Deps, plans: readonly DocumentPlan[]): Promise<void> {
  const writes = plans.flatMap((p) => p.writes);
  const outcomes =
    writes.length === 0
      ? []
      : writes.length === 1
        ? [await deps.read.put(writes[0].collection, writes[0].doc, writes[0].expectedRev)]
        : await deps.read.putMany(writes);
  let i = 0;
  for (const plan of plans) {
    const slow = [...plan.gaps];
    for (const w of plan.writes) if (outcomes[i++] === 'stale') slow.push(w.doc._id);
    for (const id of slow) await applyManyToDocument(deps, plan.collection, id, plan.byId.get(id)!, plan.evolve);
  }
}

async function foldUpTo(store: EventStore, event: StoredEvent, evolve: DocEvolve): Promise<Doc | null> {
  const events = (await store.readStream(event.streamId)).filter((e) => e.revision <= event.revision);
  return foldDocument(events, evolve);
}

function foldFrom(doc: Doc | null, events: readonly StoredEvent[], evolve: DocEvolve): Doc | null {
  if (evolve.many) return evolve.many(doc, events);
  for (const e of events) {
    const next = evolve(doc, e);
    doc = next ? { ...next, _rev: e.revision } : doc;
  }
  return doc;
}

/** The document a stream's events make, from nothing (also used to answer before a projection caught up). */
export const foldDocument = (events: readonly StoredEvent[], evolve: DocEvolve): Doc | null => foldFrom(null, events, evolve);
