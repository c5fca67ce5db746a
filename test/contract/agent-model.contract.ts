import assert from 'node:assert/strict';
import type { AgentModel, ModelStep, ToolSchema, TurnMessage } from '../../lib/ports/agent-model';

/**
 * One contract for every AgentModel adapter (STYLE §11): whatever it plans, a step is well formed
 * (a final text, or tool calls naming only the tools it was given, with object arguments and
 * distinct ids), the turn goes on when the calls' results are fed back, and a cancelled job's
 * signal stops a model that waits on anything. The builtin planner calls this too.
 */
export type AgentModelFactory = () => Promise<{ model: AgentModel; cleanup: () => Promise<void> }>;

export const CONTRACT_TOOLS: readonly ToolSchema[] = [
  {
    name: 'rename_composition',
    description: 'Renames a composition',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  },
  {
    name: 'add_markers',
    description: 'Adds markers',
    parameters: { type: 'object', properties: { phrase: { type: 'string' } } },
  },
];

export const CONTRACT_PROMPT: TurnMessage[] = [
  { role: 'system', content: 'You edit the compositions of a media project with the tools given.' },
  { role: 'user', content: 'rename this composition to Intro' },
];

function assertWellFormed(step: ModelStep, tools: readonly ToolSchema[]) {
  if (step.kind === 'final') return assert.equal(typeof step.text, 'string');
  assert.equal(step.kind, 'tool_calls');
  assert.ok(step.calls.length > 0, 'tool_calls without a call');
  const names = new Set(tools.map((t) => t.name));
  for (const call of step.calls) {
    assert.ok(names.has(call.name), `a call of ${call.name}, which it was not given`);
    assert.ok(typeof call.arguments === 'object' && call.arguments !== null && !Array.isArray(call.arguments));
    assert.ok(typeof call.id === 'string' && call.id !== '');
  }
  assert.equal(new Set(step.calls.map((c) => c.id)).size, step.calls.length, 'call ids repeat');
}

export function describeAgentModelContract(name: string, factory: AgentModelFactory, options: { waitsOnSomething?: boolean } = {}) {
  describe(`AgentModel contract: ${name}`, function () {
    this.timeout(20_000);
    let model: AgentModel;
    let cleanup: () => Promise<void>;
    beforeEach(async () => ({ model, cleanup } = await factory()));
    afterEach(() => cleanup());

    it('has a canonical id', () => assert.ok(typeof model.id === 'string' && model.id.length > 0));

    it('answers a well-formed step, and goes on once the calls’ results are fed back', async () => {
      const signal = new AbortController().signal;
      const messages = [...CONTRACT_PROMPT];
      for (let step = 0; step < 4; step++) {
        const answer = await model.next({ messages, tools: CONTRACT_TOOLS, signal });
        assertWellFormed(answer, CONTRACT_TOOLS);
        if (answer.kind === 'final') return;
        messages.push({ role: 'assistant', content: answer.text, tool_calls: answer.calls });
        for (const call of answer.calls) messages.push({ role: 'tool', tool_call_id: call.id, content: '{"summary":"done"}' });
      }
    });

    it('answers a final text when it is given no tools', async () => {
      const answer = await model.next({ messages: CONTRACT_PROMPT, tools: [], signal: new AbortController().signal });
      assert.equal(answer.kind, 'final');
    });

    if (options.waitsOnSomething) {
      it('rejects with the signal’s reason once aborted', async () => {
        const abort = new AbortController();
        abort.abort(new Error('job cancelled'));
        await assert.rejects(model.next({ messages: CONTRACT_PROMPT, tools: CONTRACT_TOOLS, signal: abort.signal }), /job cancelled/);
      });
    }
  });
}
