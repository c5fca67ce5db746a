import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { ApiError, networkFailure, UnexpectedAnswerError, type Client } from '../../sdk/client';
import { NOT_LOGGED_IN, type Connection } from './config';

/** What a tool handler receives besides its arguments: the request's signal, progress token, notifier. */
export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** A tool's answer: a short summary for people and models, and the data as structured content. */
export type ToolAnswer = { summary: string; data: Record<string, unknown> };

/** What the tool groups share: the SDK client (or why there is none) and a stderr logger. */
export type ToolContext = {
  connection: Connection | null;
  client: Client | null;
  /** Why there is no client when the configuration could not be read (else: not logged in). */
  problem?: string;
  log: (message: string) => void;
};

/** A refusal worded for the model (a missing argument, an ambiguous request); not a crash. */
export class ToolFailure extends Error {}

export function clientOf(ctx: ToolContext): Client {
  if (!ctx.client) throw new ToolFailure(ctx.problem ?? NOT_LOGGED_IN);
  return ctx.client;
}

/**
 * Wraps a tool's work so that every failure is an MCP tool error (`isError: true`) carrying the
 * API's message, never a protocol error or a crash: the model reads it and can correct itself.
 */
export function guarded<A>(ctx: ToolContext, name: string, run: (args: A, extra: Extra) => Promise<ToolAnswer>) {
  return async (args: A, extra: Extra): Promise<CallToolResult> => {
    try {
      const { summary, data } = await run(args, extra);
      // The JSON as text too: the spec asks it of tools with structured content, for older clients.
      return {
        content: [
          { type: 'text', text: summary },
          { type: 'text', text: JSON.stringify(data) },
        ],
        structuredContent: data,
      };
    } catch (err) {
      const message = describeFailure(err, ctx.connection);
      ctx.log(`${name}: ${message}`);
      return { content: [{ type: 'text', text: message }], isError: true };
    }
  };
}

/** The API's own message, with what to do where the user must act (a refused token, a service not reachable). */
export function describeFailure(err: unknown, connection: Connection | null): string {
  if (err instanceof ApiError) {
    if (err.status === 401) return `The API refused the token (${err.message}): run \`mps login\` with a valid token, or set MPS_TOKEN.`;
    const state = err.state ? `, state ${err.state}` : '';
    return `${err.message} (HTTP ${err.status} ${err.error}${state})`;
  }
  if (err instanceof ToolFailure) return err.message;
  if (err instanceof UnexpectedAnswerError) {
    return `What answers at ${connection?.baseUrl} does not look like the Media Project Service (${err.message}): check the base URL (\`mps login\` sets it).`;
  }
  const network = networkFailure(err);
  if (network !== undefined) {
    return `Cannot reach the Media Project Service at ${connection?.baseUrl} (${network}): is it running? \`mps login\` sets its address.`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** An object's fields without the undefined ones (the API refuses nothing for them, but the bodies stay small). */
export function defined<T extends Record<string, unknown>>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as T;
}
