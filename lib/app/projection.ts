import type { EventStore, StoredEvent } from '../ports/event-store';
import type { CollectionWrite, Doc, PutOutcome, ReadStore } from '../ports/read-store';

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

/**
 * Documents kept beside a stream's own, one per thing some of its events name (a project's files),
 * in a collection of their own, so that the stream's document does not grow with them. A part's
 * `_rev` is the revision of the last event of the stream applied to it. Parts follow their stream's
 * document: they are given the events its document takes (its fresh events, or on a gap those
 * after its revision, read from the store), each skipping those at or below its own revision, and
 * they are written before it. So a part always holds every event of its thing up to the stream
 * document's revision, even where the writes are not one transaction (MongoDB): a crash between
 * them leaves the parts ahead, and the events redelivered change nothing there.
 */
export interface DocParts {
  readonly collection: string;
  /** The `_id` of the part an event changes; null: none. */
  readonly key: (event: StoredEvent) => string | null;
  /** Pure: the part after the event (null: no part, the event changes nothing). */
  readonly evolve: (doc: Doc | null, event: StoredEvent) => Doc | null;
}

/** A collection of documents, one per stream, and the parts kept beside them. */
export type DocTarget = { readonly collection: string; readonly evolve: DocEvolve; readonly parts?: DocParts };

export type ApplyOutcome = 'applied' | 'duplicate' | 'rebuilt' | 'ignored';

type Deps = { read: ReadStore; store: EventStore };

export async function applyToDocument(deps: Deps, target: DocTarget, id: string, event: StoredEvent): Promise<ApplyOutcome> {
  return applyManyToDocument(deps, target, id, [event]);
}

/**
 * The same for several events of one stream in revision order (replay), written once: one read
 * and one compare-and-set write however many events there are.
 */
export async function applyManyToDocument(
  deps: Deps,
  target: DocTarget,
  id: string,
  events: readonly StoredEvent[],
): Promise<ApplyOutcome> {
  const { collection, evolve, parts } = target;
  const last = events[events.length - 1];
  for (let attempt = 0; attempt < 10; attempt++) {
    const current = await deps.read.get(collection, id);
    const rev = current?._rev ?? -1;
    const fresh = events.filter((e) => e.revision > rev);
    if (fresh.length === 0) return 'duplicate';
    const gap = fresh[0].revision > rev + 1;
    // On a gap the stream is read up to the last event; its document is folded from the start,
    // its parts are given what came after the document's revision.
    const stream = gap ? (await deps.store.readStream(last.streamId)).filter((e) => e.revision <= last.revision) : null;
    const next = stream ? foldDocument(stream, evolve) : foldFrom(current, fresh, evolve);
    if (next === null) return 'ignored';
    if (parts) await applyParts(deps, parts, stream ? stream.filter((e) => e.revision > rev) : fresh);
    const outcome = await deps.read.put(collection, { ...next, _id: id }, current ? current._rev : null);
    if (outcome === 'written') return gap ? 'rebuilt' : 'applied';
  }
  throw new Error(`could not apply ${last.type} ${last.id} to ${collection}/${id}: too much contention`);
}

/** Each part's events of `events` (in order) by the part's id. */
function partEvents(parts: DocParts, events: readonly StoredEvent[], into = new Map<string, StoredEvent[]>()) {
  for (const e of events) {
    const key = parts.key(e);
    if (key === null) continue;
    const list = into.get(key);
    if (list) list.push(e);
    else into.set(key, [e]);
  }
  return into;
}

/** The part after those of `events` above its revision; undefined when none is, or none changed it (nothing to write). */
function foldPart(parts: DocParts, doc: Doc | null, events: readonly StoredEvent[]): Doc | null | undefined {
  const next = foldFrom(
    doc,
    events.filter((e) => e.revision > (doc?._rev ?? -1)),
    parts.evolve,
  );
  return next === doc ? undefined : next;
}

/** The parts `events` make from nothing, by id (to answer before the projection has them). */
export function foldParts(parts: DocParts, events: readonly StoredEvent[]): Map<string, Doc> {
  const made = new Map<string, Doc>();
  for (const [key, its] of partEvents(parts, events)) {
    const part = foldPart(parts, null, its);
    if (part) made.set(key, part);
  }
  return made;
}

/** The writes of the parts that `byKey`'s events change, read together. */
async function planParts(read: ReadStore, parts: DocParts, byKey: ReadonlyMap<string, readonly StoredEvent[]>): Promise<CollectionWrite[]> {
  if (byKey.size === 0) return [];
  const current = new Map((await read.getMany(parts.collection, [...byKey.keys()])).map((d) => [d._id, d]));
  const writes: CollectionWrite[] = [];
  for (const [key, events] of byKey) {
    const doc = current.get(key) ?? null;
    const next = foldPart(parts, doc, events);
    if (next) writes.push({ collection: parts.collection, doc: { ...next, _id: key }, expectedRev: doc ? doc._rev : null });
  }
  return writes;
}

/** Applies `events` to the parts they name; a part another writer moved meanwhile is read again. */
async function applyParts(deps: Deps, parts: DocParts, events: readonly StoredEvent[]): Promise<void> {
  let byKey = partEvents(parts, events);
  for (let attempt = 0; attempt < 10 && byKey.size > 0; attempt++) {
    const writes = await planParts(deps.read, parts, byKey);
    const outcomes = await putAll(deps.read, writes);
    const lost = new Map<string, StoredEvent[]>();
    writes.forEach((w, i) => outcomes[i] === 'stale' && lost.set(w.doc._id, byKey.get(w.doc._id)!));
    byKey = lost;
  }
  if (byKey.size > 0) throw new Error(`could not apply events to ${parts.collection}: too much contention`);
}

const putAll = async (read: ReadStore, writes: readonly CollectionWrite[]): Promise<PutOutcome[]> =>
  writes.length === 0
    ? []
    : writes.length === 1
      ? [await read.put(writes[0].collection, writes[0].doc, writes[0].expectedRev)]
      : read.putMany(writes);

/**
 * What applying events to many documents of one collection writes: each document's next
 * version (read once, its events folded), and the documents to heal one by one (a gap).
 */
export type DocumentPlan = {
  readonly target: DocTarget;
  readonly byId: ReadonlyMap<string, readonly StoredEvent[]>;
  /** The parts' writes, made before the documents'. */
  readonly partWrites: readonly CollectionWrite[];
  readonly writes: readonly CollectionWrite[];
  readonly gaps: readonly string[];
};

export async function planDocuments(
  deps: Deps,
  target: DocTarget,
  byId: ReadonlyMap<string, readonly StoredEvent[]>,
): Promise<DocumentPlan> {
  const { collection, evolve, parts } = target;
  const current = new Map((await deps.read.getMany(collection, [...byId.keys()])).map((d) => [d._id, d]));
  const writes: CollectionWrite[] = [];
  const gaps: string[] = [];
  const byPart = new Map<string, StoredEvent[]>();
  for (const [id, events] of byId) {
    const doc = current.get(id) ?? null;
    const fresh = events.filter((e) => e.revision > (doc?._rev ?? -1));
    if (fresh.length === 0) continue;
    if (fresh[0].revision > (doc?._rev ?? -1) + 1) {
      gaps.push(id); // healed from the store
      continue;
    }
    const next = foldFrom(doc, fresh, evolve);
    if (!next) continue;
    writes.push({ collection, doc: { ...next, _id: id }, expectedRev: doc ? doc._rev : null });
    if (parts) partEvents(parts, fresh, byPart);
  }
  const partWrites = parts ? await planParts(deps.read, parts, byPart) : [];
  return { target, byId, partWrites, writes, gaps };
}

/**
 * Writes the plans' documents together (`putMany`: one transaction on SQLite; a single write
 * by itself, since a transaction around one write costs more than the write). A document that
 * met a gap or lost a race falls back to `applyManyToDocument`, so the outcome is the same as
 * applying the events one by one.
 */
export async function writePlans(deps: Deps, plans: readonly DocumentPlan[]): Promise<void> {
  // The parts first (see DocParts); a part another writer moved meanwhile is applied again alone.
  const partWrites = plans.flatMap((p) => p.partWrites);
  const partOutcomes = await putAll(deps.read, partWrites);
  let i = 0;
  for (const plan of plans) {
    const lost = plan.partWrites.filter(() => partOutcomes[i++] === 'stale').map((w) => w.doc._id);
    if (lost.length === 0) continue;
    const again = new Set(lost);
    const events = [...plan.byId.values()].flat().filter((e) => again.has(plan.target.parts!.key(e) ?? ''));
    await applyParts(deps, plan.target.parts!, events);
  }
  const writes = plans.flatMap((p) => p.writes);
  const outcomes = await putAll(deps.read, writes);
  i = 0;
  for (const plan of plans) {
    const slow = [...plan.gaps];
    for (const w of plan.writes) if (outcomes[i++] === 'stale') slow.push(w.doc._id);
    for (const id of slow) await applyManyToDocument(deps, plan.target, id, plan.byId.get(id)!);
  }
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
