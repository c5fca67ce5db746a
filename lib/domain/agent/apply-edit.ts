import { decideEdit, evolveSnapshot, type CompositionSnapshot } from '../composition';
import { isRejection, type Rejection } from '../errors';
import type { CompositionEdit, ModelComposition } from './edits';

/**
 * A turn plans tool after tool on its in-memory model: each edit is applied here as soon as it is
 * planned, so the next tool sees it. It goes through the decider's own `decideEdit` and
 * `evolveSnapshot`, so the model becomes exactly what the events will make of the composition
 * when the turn's edits are appended, and an edit the decider would refuse is refused here first.
 *
 * `revision` stays the one the model was read at: every edit of the turn is planned on it.
 */

/** What the composition was after an earlier revision, for a revert (undo); null when not known. */
export type SnapshotLookup = (revision: number) => CompositionSnapshot | null;

const unknownRevisions: SnapshotLookup = () => null;

/** The composition after `edit`; null once deleted; a rejection naming what is wrong with the edit. */
export function applyEdit(
  model: ModelComposition,
  edit: CompositionEdit,
  snapshotAt: SnapshotLookup = unknownRevisions,
): ModelComposition | null | Rejection {
  const before: CompositionSnapshot = { name: model.name, clips: model.clips, markers: model.markers, audio: model.audio, deleted: false };
  // `at` is the events' time, which the model does not keep.
  const events = decideEdit(before, edit, { planned_on: model.revision, at: '', snapshotAt });
  if (isRejection(events)) return events;
  const after = events.reduce(evolveSnapshot, before);
  if (after.deleted) return null;
  return { ...model, name: after.name, clips: after.clips, markers: after.markers, audio: after.audio };
}
