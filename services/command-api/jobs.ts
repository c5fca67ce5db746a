import { commandHandler } from '../../lib/app/command-handler';
import type { Principal } from '../../lib/app/tenancy';
import { deliveryDecider } from '../../lib/domain/delivery';
import { AppError, forbidden, notFound } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import { jobDecider } from '../../lib/domain/job';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';

/** Commands on a job that exists: DELETE /jobs/{job_id} (cancel) and POST /jobs/{job_id}/deliveries (redeliver its webhook). */

export type JobCommandDeps = { store: EventStore; clock: Clock; ids: Ids };

export type JobCommands = {
  cancel(who: Principal, jobId: string, requestId: string): Promise<void>;
  /** Asks for the job's webhook to be delivered again now (an extension: POST /jobs/{job_id}/deliveries). */
  requestRedelivery(who: Principal, jobId: string, requestId: string): Promise<void>;
};

/** Built once per app, with the handlers of the job and delivery streams. */
export function jobCommands(deps: JobCommandDeps): JobCommands {
  const jobs = commandHandler(deps.store, jobDecider, streams.job);
  const deliveries = commandHandler(deps.store, deliveryDecider, streams.delivery);
  return {
    /** One read of the job stream: the drive check and the decision see the same state. */
    async cancel(who, jobId, requestId) {
      await jobs.handle(
        jobId,
        { type: 'CancelJob', now: deps.clock.now().toISOString() },
        {
          newId: () => deps.ids.uuidv7(),
          check: (state) => {
            if (state.status === 'none') throw notFound(`job ${jobId} does not exist`);
            if (state.job.drive_id !== who.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
          },
          metadata: (state) => ({
            partition_key: state.status === 'none' ? jobId : state.job.project_id,
            correlation_id: requestId,
            drive_id: who.driveId,
            user_id: who.userId,
          }),
        },
      );
    },

    async requestRedelivery(who, jobId, requestId) {
      const { state: job } = await jobs.load(jobId);
      if (job.status === 'none') throw notFound(`job ${jobId} does not exist`);
      if (job.job.drive_id !== who.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
      if (!job.job.callback_url) throw notFound(`job ${jobId} has no callback_url, so there is nothing to deliver`);
      await deliveries.handle(
        jobId,
        { type: 'RequestRedelivery', by: who.userId, now: deps.clock.now().toISOString() },
        {
          newId: () => deps.ids.uuidv7(),
          metadata: { partition_key: job.job.project_id, correlation_id: requestId, drive_id: who.driveId, user_id: who.userId },
          // Before the job stopped there is no delivery yet: say so plainly.
          check: (state) => {
            if (!state.exists)
              throw new AppError('conflict', `job ${jobId} has not stopped yet: its webhook is sent when it does`, {
                extra: { state: job.status },
              });
          },
        },
      );
    },
  };
}
