import type { ProjectModel, ToolOutcome } from '../../../lib/domain/agent/edits';
import type { TurnTouch } from '../../../lib/domain/agent/tools';
import type { ToolSchema } from '../../../lib/ports/agent-model';

/**
 * What the turn loop needs of the editing tools (issue 20 item 5, built beside this folder): by
 * name, the schema the model sees and a function over the project model that plans changes.
 * A tool never writes: the turn applies what all its calls planned at once, at the revisions it
 * read (apply.ts). A tool refuses arguments it cannot use with an `invalid_input` AppError; the
 * refusal goes back to the model as the call's result, not to the job.
 */
export interface AgentTool {
  readonly schema: ToolSchema;
  run(model: ProjectModel, args: Readonly<Record<string, unknown>>, ctx: ToolContext): ToolOutcome | Promise<ToolOutcome>;
}

export type ToolContext = {
  /** The composition the request directed the edits to (`composition_id`), or null: the tool picks (the first with content). */
  readonly composition_id: string | null;
  /** Aborted when the job is cancelled: a tool that runs a child (silence detection) stops it. */
  readonly signal: AbortSignal;
  /** A fresh composition id, for a composition a tool creates. */
  readonly newId: () => string;
  /** The compositions the conversation's last turn changed, as they were before it (what undo restores); null: no such turn. */
  readonly lastTurn: readonly TurnTouch[] | null;
  /** The blob of a media reference of the project (null: none, e.g. a sequence), for tools that read the media itself. */
  readonly blobOf: (ref: string) => string | null;
};

/** The tools a turn offers the model, by name (a Map: a model's tool name is its input). */
export type Toolset = ReadonlyMap<string, AgentTool>;

export const toolsetOf = (tools: readonly AgentTool[]): Toolset => new Map(tools.map((t) => [t.schema.name, t]));
