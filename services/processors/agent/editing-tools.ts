import { createToolbox, type Toolbox } from '../../../lib/app/agent-toolbox';
import { AGENT_TOOLS } from '../../../lib/domain/agent/tools';
import type { ModelComposition, ProjectModel, TimeRange } from '../../../lib/domain/agent/edits';
import { invalidInput } from '../../../lib/domain/errors';
import type { SilenceDetector } from '../../../lib/ports/silence-detector';
import { toolsetOf, type AgentTool, type ToolContext, type Toolset } from './toolset';

/**
 * The editing tools (lib/domain/agent/tools) as the turn loop runs them: arguments checked against
 * each tool's schema, a refusal turned into an `invalid_input` the model reads as the call's
 * result (the turn decides the planned changes itself, on the composition deciders: turn-edits.ts), the composition a call is about defaulted (the request's, else the first with content),
 * and, for the tools that read the media itself, its silences measured first (SilenceDetector,
 * kept per blob, so a media file is measured once).
 */

/** Tools that need the media's silent intervals. */
const READS_SILENCES = new Set(['remove_silences', 'shorten_pauses']);
/** Tools that act on no one composition: they run on a project whose compositions are all deleted. */
const NO_TARGET = new Set(['undo', 'create_composition']);

export function editingToolset(deps: { silences: SilenceDetector; toolbox?: Toolbox }): Toolset {
  const toolbox = deps.toolbox ?? createToolbox(AGENT_TOOLS);
  const tools: AgentTool[] = toolbox.schemas.map((schema) => ({
    schema,
    async run(model, args, ctx) {
      const target = ctx.composition_id ?? defaultComposition(model)?.composition_id ?? (NO_TARGET.has(schema.name) ? '' : null);
      if (target === null) throw invalidInput('the project has no composition to edit');
      const silences = READS_SILENCES.has(schema.name) ? await measureSilences(deps.silences, model, ctx) : new Map();
      // Planned only: the turn decides the changes itself, on the composition deciders (turn-edits.ts).
      const ran = toolbox.plan(
        model,
        { name: schema.name, arguments: args },
        { composition_id: target, newId: ctx.newId, silences, lastTurn: ctx.lastTurn },
      );
      if (!ran.ok) throw invalidInput(ran.error);
      return ran.outcome;
    },
  }));
  return toolsetOf(tools);
}

/** SPEC: the first composition that has content, skipping the empty placeholder; else the first. */
function defaultComposition(model: ProjectModel): ModelComposition | undefined {
  return model.compositions.find((c) => c.clips.length > 0) ?? model.compositions[0];
}

/** The silent intervals of every media file the compositions play, by media reference. */
async function measureSilences(
  detector: SilenceDetector,
  model: ProjectModel,
  ctx: ToolContext,
): Promise<Map<string, readonly TimeRange[]>> {
  const refs = new Set(model.compositions.flatMap((c) => c.clips.map((clip) => clip.media)));
  const measured = new Map<string, readonly TimeRange[]>();
  for (const ref of refs) {
    const blob = ctx.blobOf(ref);
    if (blob) measured.set(ref, await detector.detect(blob, { signal: ctx.signal }));
  }
  return measured;
}
