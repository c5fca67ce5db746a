import type { JobType } from '../../lib/domain/job';
import { agentJobType, type AgentDeps } from './agent';
import { importJobType, type ImportDeps } from './import';
import type { JobTypeDefinition } from './job-type';
import { publishJobType, type PublishDeps } from './publish';

/** What the job types use besides the engine's ports: the union of their own. */
export type JobTypeDeps = ImportDeps & AgentDeps & PublishDeps;

/**
 * Every job type the processors run, one entry each: a job type named in the domain
 * (lib/domain/job.ts) without an entry here does not compile. Recipe: services/processors/README.md.
 */
export const JOB_TYPES: { readonly [T in JobType]: JobTypeDefinition<T, JobTypeDeps> } = {
  'import/project_media': importJobType,
  agent: agentJobType,
  publish: publishJobType,
};

export type AnyJobTypeDefinition = (typeof JOB_TYPES)[JobType];
