import { addMarker, cutMarkers, cutRange, keepMarkers, keepRange, type Clip, type Marker } from '../edl';
import { shortIdOf } from '../ids';
import type { CompositionEdit, ModelComposition, PlannedChange, ProjectModel } from './edits';
import { mergeRanges } from './timeline';

/**
 * A planned change applied to the in-memory project model, so a later tool call of the same turn
 * sees what earlier ones planned (issue 20). The composition deciders (lib/domain/composition.ts)
 * are the truth once the turn is appended; this mirrors them with the same edl.ts functions.
 *
 * `revision` counts as the composition stream does: a created composition is at 0, and an edit
 * that changes something adds one, while an edit that changes nothing adds none (the deciders
 * append nothing for it), so every later edit carries the revision it will really be appended at.
 */

/** A composition's content as it was after one of its revisions (what `revert` restores). */
export type CompositionSnapshot = Pick<ModelComposition, 'name' | 'clips' | 'markers' | 'audio'>;
export type SnapshotLookup = (compositionId: string, revision: number) => CompositionSnapshot | undefined;

export function applyChange(model: ProjectModel, change: PlannedChange, snapshotAt: SnapshotLookup = () => undefined): ProjectModel {
  if ('create' in change) {
    const { composition_id, name, clips, markers } = change.create;
    const created: ModelComposition = {
      composition_id,
      short_id: shortIdOf(composition_id),
      name,
      revision: 0,
      clips,
      markers,
      audio: { loudness_lufs: null, noise_reduction: false },
    };
    return { ...model, compositions: [...model.compositions, created] };
  }
  const target = model.compositions.find((c) => c.composition_id === change.composition_id);
  if (!target) throw new Error(`composition ${change.composition_id} is not in the project`);
  if (change.edit.kind === 'delete') return { ...model, compositions: model.compositions.filter((c) => c !== target) };
  const edited = editComposition(target, change.edit, snapshotAt);
  const changed = !sameContent(target, edited);
  const next = changed ? { ...edited, revision: target.revision + 1 } : target;
  return { ...model, compositions: model.compositions.map((c) => (c === target ? next : c)) };
}

function editComposition(
  c: ModelComposition,
  edit: Exclude<CompositionEdit, { kind: 'delete' }>,
  snapshotAt: SnapshotLookup,
): ModelComposition {
  switch (edit.kind) {
    case 'cut': {
      // Last range first: the earlier ranges' composition times stay valid.
      const ranges = mergeRanges(edit.ranges).reverse();
      return {
        ...c,
        clips: ranges.reduce<Clip[]>((clips, r) => cutRange(clips, r.from, r.to), [...c.clips]),
        markers: ranges.reduce<Marker[]>((markers, r) => cutMarkers(markers, r.from, r.to), [...c.markers]),
      };
    }
    case 'keep':
      return { ...c, clips: keepRange(c.clips, edit.from, edit.to), markers: keepMarkers(c.markers, edit.from, edit.to) };
    case 'rename':
      return { ...c, name: edit.name };
    case 'add_markers':
      return { ...c, markers: edit.markers.reduce<Marker[]>((markers, m) => addMarker(markers, m), [...c.markers]) };
    case 'set_audio':
      return { ...c, audio: { loudness_lufs: edit.loudness_lufs, noise_reduction: edit.noise_reduction } };
    case 'revert': {
      const snapshot = snapshotAt(c.composition_id, edit.to_revision);
      if (!snapshot) throw new Error(`composition ${c.composition_id} has no known revision ${edit.to_revision}`);
      return { ...c, ...snapshot };
    }
    default: {
      const unknown: never = edit;
      throw new Error(`unknown edit ${JSON.stringify(unknown)}`);
    }
  }
}

const sameContent = (a: CompositionSnapshot, b: CompositionSnapshot): boolean =>
  JSON.stringify(contentOf(a)) === JSON.stringify(contentOf(b));
const contentOf = ({ name, clips, markers, audio }: CompositionSnapshot) => ({ name, clips, markers, audio });
