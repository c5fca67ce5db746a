import assert from 'node:assert/strict';
import { createBuiltinModel } from '../../lib/adapters/agent/builtin';
import type { ProjectModel } from '../../lib/domain/agent/edits';
import { createToolbox } from '../../lib/app/agent-toolbox';
import type { ToolContext, TurnTouch } from '../../lib/domain/agent/tools';
import type { TurnMessage } from '../../lib/ports/agent-model';
import { clip, composition, context, MAIN_ID, OUTRO_ID, talkModel } from '../fixtures/agent-model';

const toolbox = createToolbox();
const builtin = createBuiltinModel();

/**
 * A turn as the agent job runs it (services/processors/agent, another branch), in small: the
 * model's steps, each tool call run on the model so far, results handed back as JSON, at most 8
 * steps. What the tools and the builtin model promise each other is checked through it.
 */
async function turn(project: ProjectModel, earlier: TurnMessage[], prompt: string, ctx: ToolContext) {
  const messages: TurnMessage[] = [...earlier, { role: 'user', content: prompt }];
  const touched = new Map<string, TurnTouch>();
  for (let step = 0; step < 8; step++) {
    const next = await builtin.next({ messages, tools: toolbox.schemas, signal: new AbortController().signal });
    if (next.kind === 'final') {
      messages.push({ role: 'assistant', content: next.text });
      return { text: next.text, project, messages, touched: [...touched.values()] };
    }
    messages.push({ role: 'assistant', content: next.text, tool_calls: next.calls });
    for (const call of next.calls) {
      const result = toolbox.run(project, call, ctx);
      if (result.ok) {
        for (const change of result.outcome.changes) {
          const id = 'create' in change ? change.create.composition_id : change.composition_id;
          const before = project.compositions.find((c) => c.composition_id === id);
          if (!touched.has(id)) touched.set(id, { composition_id: id, revision_before: before?.revision ?? null, before: before ?? null });
        }
        project = result.model;
      }
      messages.push({
        role: 'tool',
        tool_call_id: call.id,
        content: JSON.stringify(result.ok ? { summary: result.outcome.summary } : { error: result.error }),
      });
    }
  }
  throw new Error('the turn did not end in 8 steps');
}

const outro = composition({ composition_id: OUTRO_ID, short_id: 'fghij', name: 'Outro', clips: [clip('talk.wav', 0, 30)] });
const byId = (p: ProjectModel, id: string) => p.compositions.find((c) => c.composition_id === id)!;

describe('a turn with the builtin model and the tools', () => {
  it('edits, says what it did, does the same for Outro, and undoes that exactly', async () => {
    const start = talkModel([composition(), outro]);
    const first = await turn(start, [], 'Remove filler words and remove retakes.', context());
    assert.equal(
      first.text,
      'Removed 4 filler words (1.3 s) from Main; it is now 0:28.7. Removed 1 retake (1.5 s) from Main; it is now 0:27.2.',
    );
    assert.deepEqual(byId(first.project, OUTRO_ID), outro, 'Outro untouched');

    const second = await turn(first.project, first.messages, 'do the same for Outro', context());
    assert.equal(
      second.text,
      'Removed 4 filler words (1.3 s) from Outro; it is now 0:28.7. Removed 1 retake (1.5 s) from Outro; it is now 0:27.2.',
    );
    assert.deepEqual(byId(second.project, OUTRO_ID).clips, byId(first.project, MAIN_ID).clips);

    const third = await turn(second.project, second.messages, 'undo that', context({ lastTurn: second.touched }));
    assert.equal(third.text, 'Undid the last turn (1 composition): Outro is back to 0:30.0.');
    assert.deepEqual(byId(third.project, OUTRO_ID).clips, outro.clips, 'the clip list exactly as before');
    assert.deepEqual(byId(third.project, MAIN_ID), byId(first.project, MAIN_ID), 'Main keeps the first turn');
  });

  it('hands a refused call back and answers with the reason', async () => {
    const { text, project } = await turn(talkModel(), [], 'rename Nope to X', context());
    assert.equal(text, 'That could not be done: rename_composition: no composition is named "Nope"; the project has "Main".');
    assert.deepEqual(project, talkModel());
  });

  it('changes nothing for a prompt it does not understand', async () => {
    const { text, project, messages } = await turn(talkModel(), [], 'make it pop', context());
    assert.match(text, /^I did not understand "make it pop"/);
    assert.deepEqual(project, talkModel());
    assert.equal(messages.filter((m) => m.role === 'tool').length, 0);
  });
});
