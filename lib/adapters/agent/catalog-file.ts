import { readFileSync } from 'node:fs';
import { buildCatalog, parseModelsFile, type Catalog } from '../../domain/agent/catalog';
import { ConfigError, type Config } from '../../config';

/**
 * The agent model catalog from configuration: the built-in models, the model AGENT_LLM_URL serves
 * (AGENT_LLM_MODEL) and AGENT_MODELS_FILE. Read once at start-up by every service that needs it
 * (command API: `model` of POST /jobs/agent; query API: GET /agent/models; processors: the
 * models); a file that cannot be read or is wrong stops start-up with a message naming the problem.
 */
export function openAgentCatalog(agent: Config['agent']): Catalog {
  const llm = agent.llmUrl ? { id: agent.llmModel, upstream: agent.llmModel, cost: 'medium' as const } : null;
  try {
    return buildCatalog(llm, agent.modelsFile ? parseModelsFile(readModelsFile(agent.modelsFile)) : null);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`invalid configuration: AGENT_MODELS_FILE (${agent.modelsFile ?? 'unset'}): ${(err as Error).message}`, {
      cause: err,
    });
  }
}

function readModelsFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`not JSON: ${(err as Error).message}`, { cause: err });
  }
}
