import type { PlannedChange } from '../edits';
import { clock, plural, ToolInputError, type AgentTool } from './tool';
import { compositionDuration } from '../../edl';

/**
 * Undo: every composition the conversation's last turn changed goes back to its revision before
 * that turn (a `revert`, appended like any edit, so undo is itself undoable), one it deleted
 * included; one the turn created is deleted.
 */
export const undoLastTurn: AgentTool = {
  schema: {
    name: 'undo',
    description: "Undoes the conversation's last turn: the compositions it changed go back to what they were before it.",
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
  run(model, _args, ctx) {
    if (!ctx.lastTurn || ctx.lastTurn.length === 0) throw new ToolInputError('there is no earlier turn that changed the project to undo');
    const changes: PlannedChange[] = [];
    const said: string[] = [];
    for (const touched of ctx.lastTurn) {
      const now = model.compositions.find((c) => c.composition_id === touched.composition_id);
      if (!now) {
        // Deleted by that turn (or since): a revert of a deleted composition brings it back.
        if (touched.before && touched.revision_before !== null) {
          changes.push({ composition_id: touched.composition_id, edit: { kind: 'revert', to_revision: touched.revision_before } });
          said.push(`restored ${touched.before.name} (${clock(compositionDuration(touched.before.clips))})`);
        }
        continue;
      }
      if (touched.revision_before === null) {
        changes.push({ composition_id: now.composition_id, edit: { kind: 'delete' } });
        said.push(`deleted ${now.name}, which it created`);
      } else {
        changes.push({ composition_id: now.composition_id, edit: { kind: 'revert', to_revision: touched.revision_before } });
        const before = touched.before;
        said.push(
          before
            ? `${before.name} is back to ${clock(compositionDuration(before.clips))}`
            : `${now.name} is back to revision ${touched.revision_before}`,
        );
      }
    }
    return { changes, summary: `Undid the last turn (${plural(ctx.lastTurn.length, 'composition')}): ${said.join('; ')}` };
  },
};
