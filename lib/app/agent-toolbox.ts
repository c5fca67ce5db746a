import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { applyChange, type SnapshotLookup } from '../domain/agent/apply';
import type { ProjectModel, ToolOutcome } from '../domain/agent/edits';
import { AGENT_TOOLS, ToolInputError, type AgentTool, type ToolContext } from '../domain/agent/tools';
import type { ToolCall, ToolSchema } from '../ports/agent-model';

/**
 * The agent tools as a model calls them: each call's arguments checked against the tool's JSON
 * Schema (ajv, compiled once), the pure tool run, and a refusal turned into a message for the
 * model. The tools themselves are domain (lib/domain/agent/tools); the checking is here.
 */

/** A tool call's result: the outcome and the model with its changes applied, or what was wrong, for the model to correct. */
export type ToolCallResult =
  { readonly ok: true; readonly outcome: ToolOutcome; readonly model: ProjectModel } | { readonly ok: false; readonly error: string };

export interface Toolbox {
  readonly schemas: readonly ToolSchema[];
  /** Validates the call's arguments against the tool's schema, runs it, and applies its changes to `model`. */
  run(model: ProjectModel, call: Pick<ToolCall, 'name' | 'arguments'>, ctx: ToolContext): ToolCallResult;
  /** As `run`, without applying the changes: for a caller that decides them itself (the turn loop does, on the deciders). */
  plan(
    model: ProjectModel,
    call: Pick<ToolCall, 'name' | 'arguments'>,
    ctx: ToolContext,
  ): { readonly ok: true; readonly outcome: ToolOutcome } | { readonly ok: false; readonly error: string };
}

/** The tools with their argument schemas compiled once (a broken schema fails here, not on a call). */
export function createToolbox(tools: readonly AgentTool[] = AGENT_TOOLS): Toolbox {
  const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
  const byName = new Map<string, { tool: AgentTool; valid: ValidateFunction }>(
    tools.map((tool) => [tool.schema.name, { tool, valid: ajv.compile(tool.schema.parameters) }]),
  );
  const plan: Toolbox['plan'] = (model, call, ctx) => {
    const found = byName.get(call.name);
    if (!found) return { ok: false, error: `there is no tool "${call.name}"; the tools are ${[...byName.keys()].join(', ')}` };
    if (!found.valid(call.arguments)) return { ok: false, error: `${call.name}: ${argumentError(found.valid.errors?.[0])}` };
    try {
      return { ok: true, outcome: found.tool.run(model, call.arguments, ctx) };
    } catch (err) {
      if (err instanceof ToolInputError) return { ok: false, error: `${call.name}: ${err.message}` };
      throw err;
    }
  };
  return {
    schemas: tools.map((t) => t.schema),
    plan,
    run(model, call, ctx) {
      const planned = plan(model, call, ctx);
      if (!planned.ok) return planned;
      try {
        const snapshots = snapshotsOf(ctx);
        return {
          ok: true,
          outcome: planned.outcome,
          model: planned.outcome.changes.reduce((m, change) => applyChange(m, change, snapshots), model),
        };
      } catch (err) {
        if (err instanceof ToolInputError) return { ok: false, error: `${call.name}: ${err.message}` };
        throw err;
      }
    },
  };
}

/** "arguments.ranges[0].to must be number", "arguments has an unknown property \"foo\"". */
function argumentError(error: ErrorObject | undefined): string {
  if (!error) return 'the arguments are not valid';
  const path = `arguments${error.instancePath.replace(/\/(\d+)/g, '[$1]').replace(/\//g, '.')}`;
  if (error.keyword === 'additionalProperties') return `${path} has an unknown property "${String(error.params.additionalProperty)}"`;
  if (error.keyword === 'required') return `${path} needs "${String(error.params.missingProperty)}"`;
  return `${path} ${error.message ?? 'is not valid'}`;
}

/** The last turn's "before" contents, as `revert` reads them. */
const snapshotsOf =
  (ctx: ToolContext): SnapshotLookup =>
  (id, revision) =>
    ctx.lastTurn?.find((t) => t.composition_id === id && t.revision_before === revision)?.before ?? undefined;
