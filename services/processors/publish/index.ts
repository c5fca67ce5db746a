import type { JobTypeDefinition } from '../job-type';
import { runPublish, type PublishWorkDeps } from './work';

/** What the publish job type needs besides the engine's own ports. */
export type PublishDeps = PublishWorkDeps;

/**
 * `publish` (SPEC: POST /jobs/publish; issue 21): renders a composition as Video or Audio and
 * makes it the publication's render. Runs in the `publish` pool (PUBLISH_CONCURRENCY, default 1),
 * so a long render never delays imports or agent turns.
 */
export const publishJobType: JobTypeDefinition<'publish', PublishDeps> = {
  type: 'publish',
  group: 'publish-processor',
  pool: 'publish',
  work: runPublish,
  progressGraceMs: 250,
};
