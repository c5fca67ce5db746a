import type { ProjectModel } from '../../../lib/domain/agent/edits';
import { compositionDuration } from '../../../lib/domain/edl';
import type { Turn } from '../../../lib/domain/conversation';
import type { TurnMessage } from '../../../lib/ports/agent-model';

/**
 * What the model reads at the start of a turn: what it is and the project as it is, the earlier
 * turns of the conversation as they happened (prompt, tool calls with their results, answer), so
 * "do the same for Outro" and "undo that" have something to refer to, then the prompt.
 */
export function turnMessages(model: ProjectModel, compositionId: string | null, history: readonly Turn[], prompt: string): TurnMessage[] {
  return [{ role: 'system', content: systemPrompt(model, compositionId) }, ...history.flatMap(turnOf), { role: 'user', content: prompt }];
}

function systemPrompt(model: ProjectModel, compositionId: string | null): string {
  const compositions = model.compositions.map(
    (c) => `- ${c.name} (id ${c.composition_id}, short id ${c.short_id}): ${c.clips.length} clips, ${compositionDuration(c.clips)} s`,
  );
  const media = model.media.map((m) => `- ${m.ref}: ${m.duration} s${m.has_video ? ', video' : ''}, ${m.words.length} transcribed words`);
  return [
    'You edit the compositions of a media project with the tools given. Plan with the tools; when done, answer in one or two',
    'sentences saying concretely what changed. Times are in seconds of the composition unless a tool says otherwise.',
    compositionId
      ? `The user directs the edits to composition ${compositionId}.`
      : 'No composition was named: use the first one with content.',
    'Compositions:',
    ...(compositions.length ? compositions : ['- (none)']),
    'Media:',
    ...(media.length ? media : ['- (none)']),
  ].join('\n');
}

function turnOf(turn: Turn): TurnMessage[] {
  const calls = turn.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: parseObject(c.arguments) }));
  return [
    { role: 'user', content: turn.prompt },
    ...(calls.length > 0
      ? [
          { role: 'assistant' as const, content: null, tool_calls: calls },
          ...turn.tool_calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: c.result })),
        ]
      : []),
    { role: 'assistant', content: turn.response },
  ];
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
