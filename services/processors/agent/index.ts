import type { JobTypeDefinition } from '../job-type';
import { runTurn, type AgentWorkDeps } from './work';

export type { AgentTool, Toolset, ToolContext } from './toolset';
export { toolsetOf } from './toolset';
export { agentModels } from './models';

/** What the agent job type needs besides the engine's own ports. */
export type AgentDeps = AgentWorkDeps;

/**
 * `agent` (SPEC: POST /jobs/agent; issue 20): one prompt, one turn of its conversation. Runs in
 * the `agent` pool (AGENT_CONCURRENCY), fair across drives. Cancelled, it leaves nothing: the turn
 * writes only when it ends (work.ts), and the engine gives its reservation back.
 */
export const agentJobType: JobTypeDefinition<'agent', AgentDeps> = {
  type: 'agent',
  group: 'agent-processor',
  pool: 'agent',
  work: runTurn,
  progressGraceMs: 250,
};
