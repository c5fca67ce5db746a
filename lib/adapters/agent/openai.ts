import { AppError } from '../../domain/errors';
import type { AgentModel, ModelStep, ToolCall, ToolSchema, TurnMessage } from '../../ports/agent-model';
import { postOnce, TryAgain, upstreamOf, withRetries, type UpstreamOptions } from '../http/upstream';

/**
 * The `openai` AgentModel: chat completions with tool calling at any OpenAI-compatible
 * `/chat/completions` endpoint (AGENT_LLM_URL, AGENT_LLM_API_KEY). Talks HTTP as the
 * transcriber's openai adapter does (lib/adapters/http/upstream.ts): `node:http` with no pooled
 * connection, a connect timeout and one deadline per request. Transient answers (429, 408, 5xx, connection failures, timeouts) are
 * retried with exponential back-off (a server's Retry-After wins, within bounds); an answer whose
 * tool call is malformed (a missing name, arguments that are not a JSON object) is asked again
 * the same way, as a model may well answer properly the next time. After the last attempt the
 * step fails with a retriable AppError (the job's next attempt may find the server back); a
 * refusal (other 4xx) fails at once, not retriable. Messages never name the server's host: they
 * reach API users as a job's error_message, and the host is the deployment's.
 */

/** Defaults: 4 attempts, back-off from 500 ms up to 30 s, connect 10 s, a request 120 s (retried), answers up to 4 MiB. */
export interface OpenAiModelOptions extends UpstreamOptions {
  /** The catalog id the model answers to. */
  id: string;
  /** The model name sent upstream. */
  upstream: string;
}

export function createOpenAiAgentModel(options: OpenAiModelOptions): AgentModel {
  const { url, policy, settings } = upstreamOf(options, '/chat/completions', {
    server: 'the agent model server',
    attempts: 4,
    retryBaseMs: 500,
    maxRetryDelayMs: 30_000,
    connectTimeoutMs: 10_000,
    requestTimeoutMs: 120_000,
    retryDeadline: true,
    maxResponseBytes: 4 * 1024 * 1024,
  });
  return {
    id: options.id,
    async next({ messages, tools, signal }) {
      const body = { contentType: 'application/json', bytes: Buffer.from(JSON.stringify(requestBody(options.upstream, messages, tools))) };
      return withRetries(policy, signal, () => postOnce(url, body, settings, signal), {
        accept: (answer) => parseStep(answer.body),
        refused: (_status, failure) =>
          new AppError('unavailable', `the agent model server refused the request: ${failure}`, { retriable: false }),
        // A server that kept answering unusably will not do better on the job's next attempt; one that failed may.
        exhausted: (attempts, failure, malformed) =>
          new AppError('unavailable', `the agent model server failed ${attempts} times; last: ${failure}`, { retriable: !malformed }),
      });
    },
  };
}

const Malformed = (message: string) => new TryAgain(message, true);

function requestBody(model: string, messages: readonly TurnMessage[], tools: readonly ToolSchema[]) {
  return {
    model,
    messages: messages.map((m) =>
      m.role === 'assistant' && m.tool_calls?.length
        ? {
            role: 'assistant',
            content: m.content,
            tool_calls: m.tool_calls.map((c) => ({
              id: c.id,
              type: 'function',
              function: { name: c.name, arguments: JSON.stringify(c.arguments) },
            })),
          }
        : m,
    ),
    ...(tools.length > 0 && {
      tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
      tool_choice: 'auto',
    }),
  };
}

/** The first choice's message as a step; a malformed answer or tool call is a `TryAgain`. */
function parseStep(body: Buffer): ModelStep {
  let answer: unknown;
  try {
    answer = JSON.parse(body.toString('utf8'));
  } catch {
    throw Malformed('the agent model server answered with something that is not JSON');
  }
  const message = (answer as { choices?: { message?: unknown }[] })?.choices?.[0]?.message as
    { content?: unknown; tool_calls?: unknown } | undefined;
  if (!message || typeof message !== 'object') throw Malformed('the agent model server answered without a message');
  const text = typeof message.content === 'string' ? message.content : null;
  const raw = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  if (raw.length === 0) return { kind: 'final', text: text ?? '' };
  return { kind: 'tool_calls', calls: raw.map(toolCall), text };
}

function toolCall(raw: unknown, index: number): ToolCall {
  const call = raw as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
  const name = call?.function?.name;
  if (typeof name !== 'string' || name === '') throw Malformed(`the model's tool call ${index} has no function name`);
  let args: unknown;
  try {
    args = typeof call.function!.arguments === 'string' ? JSON.parse(call.function!.arguments || '{}') : call.function!.arguments;
  } catch {
    throw Malformed(`the model's call of ${name} has arguments that are not JSON`);
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw Malformed(`the model's call of ${name} has arguments that are not a JSON object`);
  }
  return {
    id: typeof call.id === 'string' && call.id !== '' ? call.id : `call_${index}`,
    name,
    arguments: args as Record<string, unknown>,
  };
}
