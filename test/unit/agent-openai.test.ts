import assert from 'node:assert/strict';
import { createOpenAiAgentModel } from '../../lib/adapters/agent/openai';
import { AppError } from '../../lib/domain/errors';
import type { ToolSchema, TurnMessage } from '../../lib/ports/agent-model';
import { startFakeChatServer } from '../fixtures/fake-chat-server';

/** The `openai` AgentModel against a fake chat-completions server on loopback (the real HTTP client and protocol). */
describe('openai AgentModel (fake chat-completions server on loopback)', function () {
  this.timeout(20_000);
  let server: Awaited<ReturnType<typeof startFakeChatServer>>;
  const rename: ToolSchema = {
    name: 'rename_composition',
    description: 'Renames the composition',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  };
  const messages: TurnMessage[] = [
    { role: 'system', content: 'You edit compositions.' },
    { role: 'user', content: 'call it Intro' },
  ];
  const model = (attempts = 4) =>
    createOpenAiAgentModel({
      url: server.url,
      apiKey: 'sk-test',
      id: 'smart',
      upstream: 'gpt-test',
      attempts,
      retryBaseMs: 10,
      maxRetryDelayMs: 50,
    });
  const step = (m = model()) => m.next({ messages, tools: [rename], signal: new AbortController().signal });

  before(async () => (server = await startFakeChatServer()));
  after(() => server.close());

  it('sends the messages, the tool schemas as functions, the upstream model and the key; reads tool calls', async () => {
    server.script([{ calls: [{ name: 'rename_composition', arguments: { name: 'Intro' } }] }]);
    const answer = await step();
    assert.deepEqual(answer, {
      kind: 'tool_calls',
      text: null,
      calls: [{ id: 'call_1_0', name: 'rename_composition', arguments: { name: 'Intro' } }],
    });
    const sent = server.received[0];
    assert.equal(sent.authorization, 'Bearer sk-test');
    assert.equal(sent.body.model, 'gpt-test');
    assert.deepEqual(sent.body.messages, messages);
    assert.deepEqual(sent.body.tools, [
      { type: 'function', function: { name: rename.name, description: rename.description, parameters: rename.parameters } },
    ]);
  });

  it('sends earlier tool calls back as the protocol has them (arguments as JSON text)', async () => {
    server.script([{ final: 'Renamed it to Intro.' }]);
    const withCalls: TurnMessage[] = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'rename_composition', arguments: { name: 'Intro' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '{"summary":"Renamed"}' },
    ];
    assert.deepEqual(await model().next({ messages: withCalls, tools: [rename], signal: new AbortController().signal }), {
      kind: 'final',
      text: 'Renamed it to Intro.',
    });
    assert.deepEqual(server.received[0].body.messages[2].tool_calls, [
      { id: 'c1', type: 'function', function: { name: 'rename_composition', arguments: '{"name":"Intro"}' } },
    ]);
  });

  it('retries a 429 and a 500 with back-off, then answers', async () => {
    server.script([{ status: 429, retryAfter: '0' }, { status: 500 }, { final: 'done' }]);
    assert.deepEqual(await step(), { kind: 'final', text: 'done' });
    assert.equal(server.received.length, 3);
  });

  it('asks again after a malformed tool call (arguments not JSON, no name), then answers', async () => {
    server.script([
      { calls: [{ name: 'rename_composition', arguments: '{"name": "Intro"' }] },
      { calls: [{ name: '', arguments: {} }] },
      { calls: [{ name: 'rename_composition', arguments: { name: 'Intro' } }] },
    ]);
    const answer = await step();
    assert.equal(answer.kind, 'tool_calls');
    assert.equal(server.received.length, 3);
  });

  it('gives up after its attempts with a retriable error naming the last failure', async () => {
    server.script([{ status: 503 }]);
    await assert.rejects(step(model(3)), (err: AppError) => {
      assert.ok(err instanceof AppError);
      assert.equal(err.retriable, true);
      assert.match(err.message, /failed 3 times; last: HTTP 503: scripted 503/);
      return true;
    });
    assert.equal(server.received.length, 3);
  });

  it('fails at once, not retriable, when the server refuses (401)', async () => {
    server.script([{ status: 401 }]);
    await assert.rejects(
      step(),
      (err: AppError) => err instanceof AppError && !err.retriable && /refused the request: HTTP 401/.test(err.message),
    );
    assert.equal(server.received.length, 1);
  });

  it('a malformed tool call that stays malformed ends in an error, never a call with invented arguments', async () => {
    server.script([{ calls: [{ name: 'rename_composition', arguments: '[1, 2]' }] }]);
    await assert.rejects(step(model(2)), (err: AppError) => !err.retriable && /arguments that are not a JSON object/.test(err.message));
  });

  it('stops waiting when its signal is aborted', async () => {
    server.script([{ status: 500 }]);
    const abort = new AbortController();
    const pending = createOpenAiAgentModel({ url: server.url, id: 'smart', upstream: 'gpt-test', attempts: 100, retryBaseMs: 200 }).next({
      messages,
      tools: [],
      signal: abort.signal,
    });
    setTimeout(() => abort.abort(new Error('job cancelled')), 50);
    await assert.rejects(pending, /job cancelled|aborted/);
  });
});
