import { createOpenAiAgentModel } from '../../lib/adapters/agent/openai';
import { createBuiltinModel } from '../../lib/adapters/agent/builtin';
import { startFakeChatServer, type ChatRequest } from '../fixtures/fake-chat-server';
import { describeAgentModelContract } from './agent-model.contract';

describeAgentModelContract(
  'openai (fake chat-completions server on loopback)',
  async () => {
    const server = await startFakeChatServer();
    // A model as a chat server is one: a tool call when it has tools and no results yet, then a final answer.
    server.script([
      (r: ChatRequest) =>
        !r.body.tools?.length || r.body.messages.at(-1)?.role === 'tool'
          ? { final: 'Renamed it to Intro.' }
          : { calls: [{ name: 'rename_composition', arguments: { name: 'Intro' } }] },
    ]);
    return {
      model: createOpenAiAgentModel({ url: server.url, id: 'contract-llm', upstream: 'contract-llm', retryBaseMs: 10 }),
      cleanup: () => server.close(),
    };
  },
  { waitsOnSomething: true },
);

describeAgentModelContract('builtin (the offline planner)', async () => ({
  model: createBuiltinModel(),
  cleanup: async () => undefined,
}));
