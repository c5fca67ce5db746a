import { createOpenAiAgentModel } from '../../../lib/adapters/agent/openai';
import type { Catalog } from '../../../lib/domain/agent/catalog';
import { AppError } from '../../../lib/domain/errors';
import type { AgentModel } from '../../../lib/ports/agent-model';

/**
 * The AgentModel of each catalog model: `builtin` models are answered by the offline planner,
 * `openai` ones by the chat-completions server at AGENT_LLM_URL under their upstream name. One
 * adapter per model, made when first asked for.
 */
export function agentModels(
  catalog: Catalog,
  options: { llm: { url: string; apiKey?: string } | null; builtin: AgentModel },
): (model: string) => AgentModel {
  const made = new Map<string, AgentModel>();
  return (id) => {
    const known = made.get(id);
    if (known) return known;
    const model = catalog.models.get(id);
    if (!model) throw new AppError('invalid_input', `model ${id} is no longer in the catalog`, { retriable: false });
    let adapter: AgentModel;
    if (model.provider.kind === 'builtin') adapter = options.builtin;
    else if (options.llm) adapter = createOpenAiAgentModel({ ...options.llm, id, upstream: model.provider.upstream });
    else throw new AppError('unavailable', `model ${id} is served by AGENT_LLM_URL, which is not set`, { retriable: false });
    made.set(id, adapter);
    return adapter;
  };
}
