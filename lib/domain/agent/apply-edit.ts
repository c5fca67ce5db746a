import { decideEdit, evolveSnapshot, NO_AUDIO_SETTINGS, type CompositionSnapshot, type CompositionState } from '../composition';
import { isRejection, notFound, reject, type Rejection } from '../errors';
import { shortIdOf } from '../ids';
import type { CompositionEdit, ModelComposition, PlannedChange, ProjectModel } from './edits';

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

/**
 * The project model after one planned change: an edit replaces its composition (a deleted one
 * leaves the list), a new composition joins the end at revision 0 (its creation), which later
 * edits of the same turn are planned on. An edit of a composition the model does not have is
 * `not_found`.
 */
export function applyChange(project: ProjectModel, change: PlannedChange, snapshotAt?: SnapshotLookup): ProjectModel | Rejection {
  if ('create' in change) {
    const { composition_id, name, clips, markers } = change.create;
    const created = { composition_id, short_id: shortIdOf(composition_id), name, revision: 0, clips, markers, audio: NO_AUDIO_SETTINGS };
    return { ...project, compositions: [...project.compositions, created] };
  }
  const at = project.compositions.findIndex((c) => c.composition_id === change.composition_id);
  if (at === -1) return reject(notFound(`composition ${change.composition_id} is not in the project`));
  const after = applyEdit(project.compositions[at], change.edit, snapshotAt);
  if (isRejection(after)) return after;
  const compositions = [...project.compositions];
  if (after === null) compositions.splice(at, 1);
  else compositions[at] = after;
  return { ...project, compositions };
}

/** A composition's folded state as the tools read it (null: no composition, or a deleted one). */
export function modelCompositionOf(state: CompositionState): ModelComposition | null {
  if (!state.exists || state.deleted) return null;
  const { composition_id, short_id, name, revision, clips, markers, audio } = state;
  return { composition_id, short_id, name, revision, clips, markers, audio };
}
