import type { AgentModel, ModelStep, ToolCall, ToolSchema, TurnMessage } from '../../ports/agent-model';
import { PHRASINGS, planClause, SAME_FOR, SAME_FOR_EXAMPLE, type PlannedCall } from './builtin-phrasings';

/**
 * The `builtin` AgentModel: offline and deterministic. On the first step of a turn (the last
 * message is the user's prompt) it reads the prompt with the table of phrasings
 * (builtin-phrasings.ts, docs/agent-builtin.md) and asks for the tool calls it means; on the next
 * step (tool results present) it answers with the tools' summaries joined. A prompt it cannot read
 * is answered, not refused: the answer lists what it can do.
 *
 * A tool result is read as the turn loop writes it: JSON `{"summary": …}` or `{"error": …}`, or
 * plain text taken as it is.
 */
export function createBuiltinModel(options: { id?: string } = {}): AgentModel {
  return {
    id: options.id ?? 'builtin',
    async next({ messages, tools, signal }) {
      signal.throwIfAborted();
      const current = lastIndexOf(messages, 'user');
      if (current === -1) return final(capabilities(tools));
      if (messages.slice(current + 1).some((m) => m.role === 'tool' || m.role === 'assistant'))
        return final(summaries(messages.slice(current + 1)));
      const prompt = (messages[current] as { content: string }).content;
      const calls = plan(prompt, messages.slice(0, current), tools);
      if (typeof calls === 'string') return final(calls);
      return { kind: 'tool_calls', calls: calls.map((c, i) => ({ id: `builtin_${current}_${i + 1}`, ...c })), text: null };
    },
  };
}

const final = (text: string): ModelStep => ({ kind: 'final', text });

/** The calls a prompt means, or the answer to give instead. */
function plan(prompt: string, earlier: readonly TurnMessage[], tools: readonly ToolSchema[]): PlannedCall[] | string {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const takesComposition = (name: string) =>
    Boolean((byName.get(name)?.parameters.properties as Record<string, unknown> | undefined)?.composition);
  const same = SAME_FOR.exec(prompt.trim().replace(/[.!?]+$/, ''));
  if (same) return repeatLastTurn(earlier, same[1].trim().replace(/^["'](.*)["']$/, '$1'), takesComposition);
  const calls = planPrompt(prompt, takesComposition);
  if (!calls || calls.some((c) => !byName.has(c.name))) return notUnderstood(prompt, tools);
  return calls;
}

/** The whole prompt as one clause, else split at "and", "then", commas and full stops, every part understood. */
export function planPrompt(prompt: string, takesComposition: (tool: string) => boolean): PlannedCall[] | null {
  const whole = planClause(prompt, takesComposition);
  if (whole) return whole;
  const clauses = prompt.split(/\s*(?:;|\.(?=\s|$)|,?\s+and\s+then\s+|,?\s+then\s+|,?\s+and\s+|,\s+)\s*/i).filter((c) => c.trim() !== '');
  if (clauses.length < 2) return null;
  const planned = clauses.map((c) => planClause(c, takesComposition));
  return planned.every((p) => p !== null) ? planned.flat() : null;
}

/** "do the same for Outro": the previous turn's composition edits again, on `composition`. */
function repeatLastTurn(
  earlier: readonly TurnMessage[],
  composition: string,
  takesComposition: (tool: string) => boolean,
): PlannedCall[] | string {
  const previousPrompt = lastIndexOf(earlier, 'user');
  const calls = earlier
    .slice(previousPrompt + 1)
    .flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []))
    .filter((c) => takesComposition(c.name));
  if (calls.length === 0) return `There is no earlier edit to do again for ${composition}.`;
  return calls.map((c: ToolCall) => ({ name: c.name, arguments: { ...c.arguments, composition } }));
}

function summaries(steps: readonly TurnMessage[]): string {
  const sentences = steps.flatMap((m) => (m.role === 'tool' ? [resultText(m.content)] : []));
  if (sentences.length === 0) return 'Nothing was changed.';
  return sentences.map((s) => (/[.!?]$/.test(s) ? s : `${s}.`)).join(' ');
}

function resultText(content: string): string {
  try {
    const parsed: unknown = JSON.parse(content);
    if (parsed && typeof parsed === 'object') {
      const { summary, error } = parsed as { summary?: unknown; error?: unknown };
      if (typeof summary === 'string') return summary;
      if (typeof error === 'string') return `That could not be done: ${error}`;
    }
  } catch {
    // Plain text: taken as it is.
  }
  return content.trim();
}

function notUnderstood(prompt: string, tools: readonly ToolSchema[]): string {
  const shown = prompt.length > 80 ? `${prompt.slice(0, 80)}…` : prompt;
  return `I did not understand "${shown}", so nothing was changed. ${capabilities(tools)}`;
}

function capabilities(tools: readonly ToolSchema[]): string {
  const available = new Set(tools.map((t) => t.name));
  const examples = PHRASINGS.filter((p) => p.plan(p.pattern.exec(p.examples[0])!)?.every((c) => available.has(c.name))).map(
    (p) => `“${p.examples[0]}”`,
  );
  return `I can edit the composition when asked like this: ${[...examples, `“${SAME_FOR_EXAMPLE}”`].join(', ')}.`;
}

const lastIndexOf = (messages: readonly TurnMessage[], role: TurnMessage['role']): number => {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === role) return i;
  return -1;
};
