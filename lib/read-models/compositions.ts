import type { DocEvolve } from '../app/projection';
import type { ReadModel } from '../app/read-models';
import { evolveComposition, foldComposition, NO_AUDIO_SETTINGS, type CompositionEvent, type CompositionState } from '../domain/composition';
import { compositionDuration } from '../domain/edl';
import { streamCategory } from '../domain/ids';
import type { StoredEvent } from '../ports/event-store';
import type { Doc } from '../ports/read-store';

/**
 * The `compositions` read model: each composition as it is now (clips, markers, name, size) with
 * its duration. The domain's own `evolve` makes it, so the read side cannot drift from the
 * decider; a revert carries its snapshot, so no history is kept here.
 *
 * A deleted composition keeps its document, marked `deleted: true` (a tombstone): the projection
 * writes only documents (a null from `evolve` means "nothing to write"), the revision guard needs
 * the document's `_rev` to stay idempotent, and a revert can bring the composition back. Every
 * reader (project detail, the project page, search) skips tombstones.
 */

export const COMPOSITIONS = 'compositions';

const COMPOSITION_EVENTS = [
  'CompositionCreated',
  'CompositionRangeCut',
  'CompositionRangeKept',
  'CompositionClipsInserted',
  'CompositionClipsRemoved',
  'CompositionClipsReordered',
  'CompositionRenamed',
  'CompositionMarkerAdded',
  'CompositionReverted',
  'CompositionRangesCut',
  'CompositionMarkersAdded',
  'CompositionAudioSet',
  'CompositionDeleted',
] as const satisfies readonly CompositionEvent['type'][];

type Existing = Extract<CompositionState, { exists: true }>;

export function evolveCompositionDoc(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as CompositionEvent;
  return documentOf(doc, evolveComposition(doc ? stateOf(doc) : { exists: false }, event), stored.revision);
}

/** The document of the state `after` reached at `revision`; `doc` as it was when there is no composition. */
function documentOf(doc: Doc | null, after: CompositionState, revision: number): Doc | null {
  if (!after.exists) return doc;
  const { exists: _e, log: _l, ...state } = after;
  return { ...state, _id: state.composition_id, _rev: revision, duration: compositionDuration(state.clips) };
}

/**
 * Many events at once: the domain's fold (a run of cuts applied to one list in place), then the
 * document once, as evolving them one by one makes it. Evolving one by one copied the clips and
 * measured their duration at each event: a document folded from the stream of a composition
 * edited 6,000 times took 1.3 s (a rebuild, a gap healed), and 2,000 times 0.28 s.
 */
export function foldCompositionDoc(doc: Doc | null, events: readonly StoredEvent[]): Doc | null {
  if (events.length === 0) return doc;
  const after = foldComposition(
    doc ? stateOf(doc) : { exists: false },
    events.map((e) => ({ type: e.type, data: e.data }) as CompositionEvent),
  );
  return documentOf(doc, after, events[events.length - 1].revision);
}

/** The projector's evolve: one event, or many through `many`. */
export const compositionDocEvolve: DocEvolve = Object.assign((doc: Doc | null, stored: StoredEvent) => evolveCompositionDoc(doc, stored), {
  many: foldCompositionDoc,
});

/** A document as the state it was made from (documents written before audio settings and deletion have neither). */
const stateOf = (doc: Doc): Existing => {
  const { audio = NO_AUDIO_SETTINGS, deleted = false } = doc as { audio?: Existing['audio']; deleted?: boolean };
  return { ...(doc as unknown as Existing), audio, deleted, exists: true, log: null };
};

/** Whether a document of this model is a deleted composition's tombstone. */
export const isDeletedComposition = (doc: Readonly<Record<string, unknown>>): boolean => doc.deleted === true;

export const compositionsModel: ReadModel = {
  name: COMPOSITIONS,
  version: 2, // 2: audio settings and deletion tombstones
  handles: new Set(COMPOSITION_EVENTS),
  docId: (e) => {
    const category = streamCategory(e.streamId);
    if (category === 'composition') return e.streamId.slice('composition-'.length);
    // Written before compositions had streams: the whole composition on its project's stream.
    if (category === 'project' && e.type === 'CompositionCreated') return String(e.data.composition_id);
    return null;
  },
  evolve: compositionDocEvolve,
  indexes: [['project_id']],
};
