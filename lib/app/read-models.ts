import type { EventStore, StoredEvent } from '../ports/event-store';
import type { Doc, ReadStore } from '../ports/read-store';
import { applyToDocument, planDocuments, writePlans, type DocEvolve, type DocParts, type DocumentPlan } from './projection';
import { settleTotal, writeFactOnce, type TotalSpec } from './totals';

/**
 * Read models as definitions (STYLE §14): the projector, replay and start-up take a list of
 * these and name none of them. Adding a read model is one new definition and one line in the
 * list; start-up builds it from the event store (see `staleModels`).
 */
export interface ReadModel {
  /** Its collection in the ReadStore. */
  readonly name: string;
  /** Bump when `evolve` or the document's shape changes: start-up then rebuilds the model. */
  readonly version: number;
  /**
   * The event types it reads. A document follows one stream, so list every type its streams
   * carry: an event of that stream the model did not get would look like a gap, healed by
   * folding the stream again.
   */
  readonly handles: ReadonlySet<string>;
  /** The document an event belongs to; null when the event is not this model's (another kind of stream). */
  readonly docId: (event: StoredEvent) => string | null;
  /** Pure: the document after the event (null: no document). */
  readonly evolve: DocEvolve;
  readonly indexes: readonly (readonly string[])[];
  /**
   * `fact`: one document per event, written once and never changed (a charge). The default,
   * `stream`: one document per stream, revision-guarded, gaps healed from the store.
   */
  readonly kind?: 'stream' | 'fact';
  /** For a `fact` model: a running total of one of its fields, kept as facts are written (see totals.ts). */
  readonly total?: TotalSpec;
  /**
   * For a `stream` model: documents kept beside each stream's, one per thing its events name (a
   * project's files), in their own collection, rebuilt with the model (see `DocParts`).
   */
  readonly parts?: DocParts & { readonly indexes: readonly (readonly string[])[] };
}

type Deps = { read: ReadStore; store: EventStore };

export async function prepareModels(read: ReadStore, models: readonly ReadModel[]): Promise<void> {
  for (const model of models) {
    for (const fields of model.indexes) await read.ensureIndex(model.name, fields);
    for (const fields of model.parts?.indexes ?? []) await read.ensureIndex(model.parts!.collection, fields);
  }
}

/**
 * Applies one event to every model that reads it. Idempotent: a redelivery changes nothing.
 * `observeLag` is told, per model that read it, how long after its append the event was applied.
 */
export async function projectEvent(
  deps: Deps & { observeLag?: (model: string, seconds: number) => void },
  models: readonly ReadModel[],
  event: StoredEvent,
): Promise<void> {
  for (const model of models) {
    if (!model.handles.has(event.type)) continue;
    const id = model.docId(event);
    if (id === null) continue;
    if (model.kind === 'fact') await writeFact(deps.read, model, id, event);
    else await applyToDocument(deps, targetOf(model), id, event);
    deps.observeLag?.(model.name, secondsSince(event.createdAt));
  }
}

const targetOf = (model: ReadModel) => ({ collection: model.name, evolve: model.evolve, parts: model.parts });

export const secondsSince = (iso: string) => Math.max(0, (Date.now() - Date.parse(iso)) / 1000);

/** A model's share of some events: each document's events in order, and the facts' events by id. */
function byDocument(model: ReadModel, events: readonly StoredEvent[]) {
  const streams = new Map<string, StoredEvent[]>();
  const facts: [id: string, event: StoredEvent][] = [];
  for (const e of events) {
    if (!model.handles.has(e.type)) continue;
    const id = model.docId(e);
    if (id === null) continue;
    if (model.kind === 'fact') {
      facts.push([id, e]);
      continue;
    }
    const list = streams.get(id);
    if (list) list.push(e);
    else streams.set(id, [e]);
  }
  return { streams, facts };
}

/**
 * Projects a page of `$all` (replay): each document's events are folded and written once, and
 * the page's facts written together. Facts' totals are not kept here: `rebuildModels` settles
 * them from the facts once the last page is written.
 */
export async function projectPage(deps: Deps, models: readonly ReadModel[], events: readonly StoredEvent[]): Promise<void> {
  const plans: DocumentPlan[] = [];
  for (const model of models) {
    const { streams, facts } = byDocument(model, events);
    const firsts = new Map<string, Doc>();
    for (const [id, e] of facts) {
      const fact = firsts.has(id) ? null : factOf(model, id, e);
      if (fact) firsts.set(id, fact);
    }
    // `stale` outcomes: facts already there (a live projector beside the replay wrote them).
    if (firsts.size > 0) await deps.read.putMany([...firsts.values()].map((doc) => ({ collection: model.name, doc, expectedRev: null })));
    if (streams.size > 0) plans.push(await planDocuments(deps, targetOf(model), streams));
  }
  // Every model's documents of the page in one transaction.
  await writePlans(deps, plans);
}

/**
 * Applies events delivered together (what the projector was handed in one turn) to every model
 * that reads them: the same documents as `projectEvent` one event after the other, but each
 * document is read once and its events folded, and the documents of every model are written
 * together (`putMany`: one transaction on SQLite, where a write alone is a commit of its own).
 * Facts are written first, one by one, their totals kept, as `projectEvent` writes them.
 * `observeLag` is told, per model and event, once the documents are written.
 */
export async function projectBatch(
  deps: Deps & { observeLag?: (model: string, seconds: number) => void },
  models: readonly ReadModel[],
  events: readonly StoredEvent[],
): Promise<void> {
  const handled: { model: ReadModel; events: StoredEvent[] }[] = [];
  const plans: DocumentPlan[] = [];
  for (const model of models) {
    const { streams, facts } = byDocument(model, events);
    for (const [id, e] of facts) await writeFact(deps.read, model, id, e);
    if (streams.size > 0) plans.push(await planDocuments(deps, targetOf(model), streams));
    handled.push({ model, events: [...facts.map(([, e]) => e), ...[...streams.values()].flat()] });
  }
  await writePlans(deps, plans);
  if (!deps.observeLag) return;
  for (const { model, events: its } of handled) for (const e of its) deps.observeLag(model.name, secondsSince(e.createdAt));
}

/** A fact model's document for `event` (null: the event makes none). */
function factOf(model: ReadModel, id: string, event: StoredEvent): Doc | null {
  const doc = model.evolve(null, event);
  return doc && ({ ...doc, _id: id, _rev: 0 } as Doc);
}

async function writeFact(read: ReadStore, model: ReadModel, id: string, event: StoredEvent): Promise<void> {
  const fact = factOf(model, id, event);
  if (!fact) return;
  if (model.total) await writeFactOnce(read, model.name, model.total, fact);
  else await read.put(model.name, fact, null); // `stale`: already there
}

/** Rebuilds `models` from position 0 of the event store (all of them unless told). */
export async function rebuildModels(
  deps: Deps & {
    onProgress?: (events: number) => void;
    batchSize?: number;
    /** Runs after each page is projected (the search index follows the documents). */
    afterPage?: (page: readonly StoredEvent[]) => Promise<void>;
  },
  models: readonly ReadModel[],
): Promise<{ events: number; seconds: number; eventsPerSecond: number }> {
  const started = process.hrtime.bigint();
  for (const model of models) {
    if (model.total) await deps.read.clear(model.total.collection);
    if (model.parts) await deps.read.clear(model.parts.collection);
    await deps.read.clear(model.name);
  }
  await prepareModels(deps.read, models);
  let events = 0;
  let after: string | null = null;
  const totalled = models.filter((m) => m.total).map((m) => ({ model: m, keys: new Set<string>() }));
  for (;;) {
    const page = await deps.store.readAll(after, deps.batchSize ?? 1000);
    if (page.length === 0) break;
    await projectPage(deps, models, page);
    await deps.afterPage?.(page);
    for (const { model, keys } of totalled) {
      for (const e of page) {
        const fact = model.handles.has(e.type) ? model.evolve(null, e) : null;
        if (fact) keys.add(String(fact[model.total!.by]));
      }
    }
    events += page.length;
    after = page[page.length - 1].position;
    deps.onProgress?.(events);
  }
  for (const { model, keys } of totalled) for (const key of keys) await settleTotal(deps.read, model.name, model.total!, key);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { events, seconds, eventsPerSecond: seconds > 0 ? Math.round(events / seconds) : events };
}

const MARKER = { collection: 'meta', id: 'read-models' };

/**
 * The models the read store does not hold at their current version: new ones, changed ones, or
 * all of them when the store was emptied or replaced (no marker). The log's checkpoint lives with
 * the log, so without this a new or emptied model would stay empty while the group carries on.
 */
export async function staleModels<M extends { name: string; version: number }>(read: ReadStore, models: readonly M[]): Promise<M[]> {
  const marker = await read.get(MARKER.collection, MARKER.id);
  if (!marker) return [...models];
  const built = (marker.versions ?? {}) as Record<string, unknown>;
  // Stores marked before models had versions hold the first version of the two models of then.
  const legacy = marker.versions === undefined ? { jobs: 1, charges: 1 } : {};
  return models.filter((m) => (Object.hasOwn(built, m.name) ? built[m.name] : legacy[m.name as keyof typeof legacy]) !== m.version);
}

/**
 * Records that `models` are built at their versions (after a rebuild). Anything else that is
 * built from the log (the search index) is named the same way, `{name, version}`.
 */
export async function markBuilt(read: ReadStore, models: readonly { name: string; version: number }[]): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const marker = await read.get(MARKER.collection, MARKER.id);
    const versions = {
      ...((marker?.versions ?? {}) as Record<string, number>),
      ...Object.fromEntries(models.map((m) => [m.name, m.version])),
    };
    const doc = { _id: MARKER.id, _rev: (marker?._rev ?? -1) + 1, versions, updated_at: new Date().toISOString() };
    if ((await read.put(MARKER.collection, doc, marker ? marker._rev : null)) === 'written') return;
  }
  throw new Error('could not record the read models built (the marker kept changing)');
}

/** The projector's consumer group (query-api's members); readers in other processes wait on its marks. Never renamed: its checkpoint has that name. */
export const PROJECTIONS_GROUP = 'projections';
