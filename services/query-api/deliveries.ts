import type Router from '@koa/router';
import { forbidden, notFound } from '../../lib/domain/errors';
import { isJobId } from '../../lib/domain/ids';
import type { ApiContext } from '../../lib/http/middleware';
import type { ReadQueries } from '../../lib/ports/read-store';
import { JOBS } from '../../lib/read-models/jobs';
import { DELIVERIES, type DeliveryAttemptView } from '../../lib/read-models/deliveries';

/** GET /jobs/{job_id}/deliveries (an extension of the spec): the webhook attempts of a job. */
export function mountDeliveries(v1: Router, deps: { read: ReadQueries }): void {
  v1.get('/jobs/:job_id/deliveries', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const jobId = ctx.params.job_id;
    const job = isJobId(jobId) ? await deps.read.get(JOBS, jobId) : null;
    if (!job) throw notFound(`job ${jobId} does not exist`);
    if (job.drive_id !== auth.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
    const delivery = await deps.read.get(DELIVERIES, jobId);
    if (!delivery) {
      ctx.body = { job_id: jobId, state: 'none', attempts: [] };
      return;
    }
    const attempts = (delivery.attempts as DeliveryAttemptView[]).map((a) => ({
      attempt: a.attempt,
      at: a.at,
      ...(a.status !== null ? { status: a.status } : { error: a.error }),
      duration_ms: a.duration_ms,
      outcome: a.outcome,
      ...(a.next_attempt_at !== null && { next_attempt_at: a.next_attempt_at }),
    }));
    ctx.body = {
      job_id: jobId,
      webhook_id: delivery.delivery_id,
      url: delivery.url,
      state: delivery.state,
      ...(delivery.state === 'pending' && delivery.due_at ? { next_attempt_at: delivery.due_at } : {}),
      attempts,
    };
  });
}
