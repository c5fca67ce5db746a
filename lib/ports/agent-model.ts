/**
 * AgentModel (DESIGN §2): a prompt and the turn so far → the next step, tool calls or a final answer.
 * Shaped like chat completions with tool calling, so the `openai` adapter maps it one to one and the
 * builtin planner (offline, deterministic) answers the same way. The turn loop (services/processors/agent)
 * runs the tools and calls `next` again with their results, at most a bounded number of steps.
 */

import type { ToolSchema } from '../domain/agent/tools/tool';

/** The tools' schemas are the domain's (lib/domain/agent/tools); the port hands them to a model. */
export type { ToolSchema };

export type ToolCall = { readonly id: string; readonly name: string; readonly arguments: Readonly<Record<string, unknown>> };

/** The conversation as the model reads it: earlier turns first, then this turn's prompt and steps. */
export type TurnMessage =
  | { readonly role: 'system'; readonly content: string }
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string | null; readonly tool_calls?: readonly ToolCall[] }
  | { readonly role: 'tool'; readonly tool_call_id: string; readonly content: string };

export type ModelStep =
  | { readonly kind: 'tool_calls'; readonly calls: readonly ToolCall[]; readonly text: string | null }
  | { readonly kind: 'final'; readonly text: string };

export interface AgentModel {
  /** Canonical model id, as listed by GET /v1/agent/models. */
  readonly id: string;
  /**
   * The next step of the turn. Rejects with an AppError: `retriable: true` for a peer that may answer
   * later (429, 5xx, timeouts, after the adapter's own retries), `retriable: false` for an answer that
   * will not change (a malformed tool call it could not repair, a refused key).
   */
  next(input: {
    readonly messages: readonly TurnMessage[];
    readonly tools: readonly ToolSchema[];
    readonly signal: AbortSignal;
  }): Promise<ModelStep>;
}
