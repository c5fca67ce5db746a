import { AppError } from '../../../lib/domain/errors';
import type { JobContext, WorkOutcome } from '../job-runner';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export type PublishWorkDeps = {};

/** Work in progress on main (issue 21): the render lands in the next commits. */
export async function runPublish(_deps: PublishWorkDeps, _ctx: JobContext<'publish'>): Promise<WorkOutcome<'publish'>> {
  throw new AppError('unavailable', 'publishing is not implemented yet', { retriable: false });
}
