import type { Logger } from 'pino';
import type { JobQueued } from '../../lib/domain/job';
import type { EventLog } from '../../lib/ports/event-log';
import type { Subscription } from '../../lib/ports/event-store';
import { importMedia, type ImportWorkDeps } from './import-work';
import { runJob, type RunnerDeps } from './job-runner';

/** The processors service: consumes queued jobs from the log and does their work. */

export const IMPORT_GROUP = 'import-processor';

export type ProcessorsDeps = Omit<RunnerDeps, 'shutdown'> & ImportWorkDeps & { log: EventLog; logger: Logger; concurrency: number };

export async function start(deps: ProcessorsDeps): Promise<{ stop(): Promise<void> }> {
  const shutdown = new AbortController();
  const runner: RunnerDeps = { ...deps, shutdown: shutdown.signal };
  const subscription: Subscription = await deps.log.subscribe(
    IMPORT_GROUP,
    async (event, delivery) => {
      if (event.type !== 'JobQueued') return;
      const job = event.data as JobQueued['data'];
      if (job.job_type !== 'import/project_media') return;
      await runJob(runner, job, delivery, (ctx) => importMedia(deps, ctx));
    },
    { concurrency: deps.concurrency },
  );
  deps.logger.info({ group: IMPORT_GROUP, concurrency: deps.concurrency }, 'processors started');
  return {
    async stop() {
      shutdown.abort(new Error('shutting down'));
      await subscription.close();
    },
  };
}
