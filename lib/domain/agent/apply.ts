import { isRejection } from '../errors';
import { applyChange as applyToProject } from './apply-edit';
import type { ModelComposition, PlannedChange, ProjectModel } from './edits';
import { ToolInputError } from './tools/tool';

/**
 * The toolbox's side of a planned change: the project model after it, through the composition
 * decider's own code (apply-edit.ts), so a later tool call of the same turn sees exactly what the
 * events will make of it. Every edit of a turn is planned on the revision the turn read, so the
 * model's revisions do not move within a turn. An edit the decider would refuse is a
 * `ToolInputError`, whose message goes back to the model.
 */

/** A composition's content as it was after one of its revisions (what `revert` restores). */
export type CompositionSnapshot = Pick<ModelComposition, 'name' | 'clips' | 'markers' | 'audio'>;
export type SnapshotLookup = (compositionId: string, revision: number) => CompositionSnapshot | undefined;

export function applyChange(model: ProjectModel, change: PlannedChange, snapshotAt: SnapshotLookup = () => undefined): ProjectModel {
  const lookup = (revision: number) => {
    if ('create' in change) return null;
    const snapshot = snapshotAt(change.composition_id, revision);
    return snapshot ? { ...snapshot, deleted: false } : null;
  };
  const after = applyToProject(model, change, lookup);
  if (isRejection(after)) throw new ToolInputError(after.error.message);
  return after;
}
