import type { TurnTouch } from '../../../lib/domain/agent/tools';
import { snapshotAt } from '../../../lib/domain/composition';
import type { Turn } from '../../../lib/domain/conversation';
import type { Ids } from '../../../lib/ports/clock';
import type { ProcessorHandlers } from '../handlers';
import type { ToolContext } from './toolset';

/**
 * What the tools of one turn share besides the project model: new ids, where each media file's
 * blob is, and the conversation's last turn that changed something, with each composition it
 * changed as it was before (folded again from the composition's events), for undo.
 */
export async function turnToolContext(
  deps: { on: ProcessorHandlers; ids: Ids },
  projectId: string,
  turns: readonly Turn[],
): Promise<Omit<ToolContext, 'composition_id' | 'signal'>> {
  const { state: project } = await deps.on.projects.load(projectId);
  const blobs = new Map(project.exists ? [...project.media].map(([ref, file]) => [ref, file.blob_key]) : []);
  return { newId: deps.ids.uuidv7, blobOf: (ref) => blobs.get(ref) ?? null, lastTurn: await lastTurnOf(deps, turns) };
}

async function lastTurnOf(deps: { on: ProcessorHandlers }, turns: readonly Turn[]): Promise<TurnTouch[] | null> {
  const last = [...turns].reverse().find((t) => t.revisions.length > 0);
  if (!last) return null;
  return Promise.all(
    last.revisions.map(async ({ composition_id, before }): Promise<TurnTouch> => {
      if (before === null) return { composition_id, revision_before: null, before: null };
      const { state } = await deps.on.compositions.load(composition_id);
      const then = state.exists ? snapshotAt(state, before) : null;
      const content = then && { name: then.name, clips: then.clips, markers: then.markers, audio: then.audio };
      return { composition_id, revision_before: before, before: content };
    }),
  );
}
