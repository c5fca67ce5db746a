import type { ReadModel } from '../app/read-models';
import { evolveComposition, type CompositionEvent, type CompositionState } from '../domain/composition';
import { compositionDuration } from '../domain/edl';
import { streamCategory } from '../domain/ids';
import type { StoredEvent } from '../ports/event-store';
import type { Doc } from '../ports/read-store';

/**
 * The `compositions` read model: each composition as it is now (clips, markers, name, size) with
 * its duration. The domain's own `evolve` makes it, so the read side cannot drift from the
 * decider; a revert carries its snapshot, so no history is kept here.
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
] as const satisfies readonly CompositionEvent['type'][];

type Existing = Extract<CompositionState, { exists: true }>;

export function evolveCompositionDoc(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as CompositionEvent;
  const before: CompositionState = doc ? ({ ...(doc as unknown as Existing), exists: true, history: [] } as Existing) : { exists: false };
  const after = evolveComposition(before, event);
  if (!after.exists) return doc;
  const { exists: _e, history: _h, ...state } = after;
  return { ...state, _id: state.composition_id, _rev: stored.revision, duration: compositionDuration(state.clips) };
}

export const compositionsModel: ReadModel = {
  name: COMPOSITIONS,
  version: 1,
  handles: new Set(COMPOSITION_EVENTS),
  docId: (e) => {
    const category = streamCategory(e.streamId);
    if (category === 'composition') return e.streamId.slice('composition-'.length);
    // Written before compositions had streams: the whole composition on its project's stream.
    if (category === 'project' && e.type === 'CompositionCreated') return String(e.data.composition_id);
    return null;
  },
  evolve: evolveCompositionDoc,
  indexes: [['project_id']],
};
