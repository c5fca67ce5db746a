import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../domain/errors';
import type { AgentModel, ModelStep, ToolCall, ToolSchema, TurnMessage } from '../../ports/agent-model';

/**
 * The `openai` AgentModel: chat completions with tool calling at any OpenAI-compatible
 * `/chat/completions` endpoint (AGENT_LLM_URL, AGENT_LLM_API_KEY). Talks HTTP as the
 * transcriber's openai adapter does: `node:http` with no pooled connection, a connect timeout and
 * one deadline per request. Transient answers (429, 408, 5xx, connection failures, timeouts) are
 * retried with exponential back-off (a server's Retry-After wins, within bounds); an answer whose
 * tool call is malformed (a missing name, arguments that are not a JSON object) is asked again
 * the same way, as a model may well answer properly the next time. After the last attempt the
 * step fails with a retriable AppError (the job's next attempt may find the server back); a
 * refusal (other 4xx) fails at once, not retriable. Messages never name the server's host: they
 * reach API users as a job's error_message, and the host is the deployment's.
 */

export interface OpenAiModelOptions {
  /** Base URL, e.g. `https://api.openai.com/v1`; `/chat/completions` is appended. */
  url: string;
  apiKey?: string;
  /** The catalog id the model answers to. */
  id: string;
  /** The model name sent upstream. */
  upstream: string;
  /** Attempts per step, the first included; default 4. */
  attempts?: number;
  /** First back-off; doubles per attempt (jittered). Default 500. */
  retryBaseMs?: number;
  /** Longest wait between attempts, also for Retry-After; default 30 000. */
  maxRetryDelayMs?: number;
  /** Default 10 000. */
  connectTimeoutMs?: number;
  /** Deadline of one request, connect to last byte; default 120 000. */
  requestTimeoutMs?: number;
  /** Default 4 MiB. */
  maxResponseBytes?: number;
}

export function createOpenAiAgentModel(options: OpenAiModelOptions): AgentModel {
  const url = new URL(`${options.url.replace(/\/+$/, '')}/chat/completions`);
  const attempts = options.attempts ?? 4;
  const settings: PostSettings = {
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 120_000,
    maxResponseBytes: options.maxResponseBytes ?? 4 * 1024 * 1024,
  };
  return {
    id: options.id,
    async next({ messages, tools, signal }) {
      const body = JSON.stringify(requestBody(options.upstream, messages, tools));
      for (let attempt = 1; ; attempt++) {
        let failure: string;
        let malformed = false;
        let retryAfterMs: number | undefined;
        try {
          const answer = await postJson(url, body, settings, signal);
          if (answer.status >= 200 && answer.status <= 299) return parseStep(answer.body);
          failure = `HTTP ${answer.status}${serverMessage(answer.body)}`;
          if (!isTransientStatus(answer.status)) {
            throw new AppError('unavailable', `the agent model server refused the request: ${failure}`, { retriable: false });
          }
          retryAfterMs = parseRetryAfter(answer.retryAfter);
        } catch (err) {
          if (!(err instanceof TryAgain)) throw err;
          failure = err.message;
          malformed = err.malformed;
        }
        if (attempt >= attempts) {
          // A server that kept answering unusably will not do better on the job's next attempt; one that failed may.
          throw new AppError('unavailable', `the agent model server failed ${attempt} times; last: ${failure}`, { retriable: !malformed });
        }
        const backoff = (options.retryBaseMs ?? 500) * 2 ** (attempt - 1) * (0.75 + Math.random() / 2);
        await sleep(Math.min(retryAfterMs ?? backoff, options.maxRetryDelayMs ?? 30_000), undefined, { signal });
      }
    },
  };
}

/** A failure worth another attempt of this step; it never leaves the retry loop. `malformed`: the server answered, but not usably. */
class TryAgain extends Error {
  constructor(
    message: string,
    readonly malformed = false,
  ) {
    super(message);
  }
}
const Malformed = (message: string) => new TryAgain(message, true);

const isTransientStatus = (status: number) => status >= 500 || status === 429 || status === 408;

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

function serverMessage(body: Buffer): string {
  try {
    const message = (JSON.parse(body.toString('utf8')) as { error?: { message?: unknown } })?.error?.message;
    return typeof message === 'string' ? `: ${message.slice(0, 300)}` : '';
  } catch {
    return '';
  }
}

/** Retry-After is seconds or an HTTP date. */
function parseRetryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}

// ---- one request -----------------------------------------------------------------------------

interface PostSettings {
  headers: Record<string, string>;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  maxResponseBytes: number;
}
interface Answer {
  status: number;
  retryAfter?: string;
  body: Buffer;
}

/** One JSON POST on its own connection; a connection failure, timeout or cut answer is a `TryAgain`. */
function postJson(url: URL, body: string, settings: PostSettings, signal: AbortSignal): Promise<Answer> {
  signal.throwIfAborted();
  const payload = Buffer.from(body);
  const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method: 'POST',
    agent: false,
    headers: {
      ...settings.headers,
      accept: 'application/json',
      'content-type': 'application/json',
      'content-length': String(payload.length),
      connection: 'close',
    },
  });
  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, answer?: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      clearTimeout(deadline);
      signal.removeEventListener('abort', onAbort);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(answer!);
    };
    const onAbort = () => finish(signal.reason instanceof Error ? signal.reason : new Error('the agent step was aborted'));
    const connectTimer = setTimeout(
      () => finish(new TryAgain(`could not connect to the agent model server within ${settings.connectTimeoutMs / 1000} s`)),
      settings.connectTimeoutMs,
    );
    const deadline = setTimeout(
      () => finish(new TryAgain(`the agent model server did not answer within ${settings.requestTimeoutMs / 1000} s`)),
      settings.requestTimeoutMs,
    );
    req.on('socket', (socket) => socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer)));
    req.on('error', (err) =>
      finish(new TryAgain(`the request to the agent model server failed (${(err as NodeJS.ErrnoException).code ?? 'network'})`)),
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received <= settings.maxResponseBytes) chunks.push(chunk);
        else
          finish(
            new AppError('unavailable', `the agent model server answered with more than ${settings.maxResponseBytes} bytes`, {
              retriable: false,
            }),
          );
      });
      res.on('error', () => undefined); // its 'close' without `complete` says it
      res.on('end', () => {
        const retryAfter = res.headers['retry-after'];
        finish(null, {
          status: res.statusCode ?? 0,
          retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          body: Buffer.concat(chunks),
        });
      });
      res.on('close', () => {
        if (!res.complete) finish(new TryAgain('the agent model server closed the connection before the end of its answer'));
      });
    });
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    else req.end(payload);
  });
}
