import type { Client, Job } from '../../sdk/client';
import { CliError, Exit } from './exit';
import { note, printFields, printJson } from './output';
import type { Context } from './run';

/** One line per change while a job is followed: its state, and its progress while it runs. */
export function jobLine(job: Job): string {
  if (job.job_state === 'running' && job.progress) return `${job.job_state} ${Math.round(job.progress.percent)}% ${job.progress.label}`;
  if (job.job_state === 'stopped') return `stopped: ${job.result?.status ?? 'unknown'}`;
  return job.job_state;
}

export function printJob(job: Job): void {
  const r = job.result;
  printFields([
    ['job', job.job_id],
    ['type', job.job_type],
    ['state', job.job_state],
    ['progress', job.progress ? `${Math.round(job.progress.percent)}% ${job.progress.label}` : undefined],
    ['created', job.created_at],
    ['stopped', job.stopped_at],
    ['project', job.project_id],
    ['project url', job.project_url],
    ['result', r?.status],
    ['error', r?.error_message],
    ['compositions', r?.created_compositions?.map((c) => `${c.name} (${c.id})`).join(', ')],
    ['agent', r?.agent_response],
    ['share url', r?.share_url],
    ['download url', r?.download_url],
  ]);
}

/**
 * Waits for the job, printing each change to stderr (stdout gets the final job), and fails with
 * exit 3 when it ends in error or cancelled.
 */
export async function waitAndReport(ctx: Context, client: Client, jobId: string): Promise<Job> {
  const job = await client
    .waitForJob(jobId, {
      signal: ctx.signal,
      onUpdate: (j) => {
        if (!ctx.json) note(`${j.job_id}: ${jobLine(j)}`);
      },
    })
    .catch((err: unknown) => {
      // Ctrl-C stops the waiting, not the job: say how to find it again.
      if (ctx.signal.aborted) {
        throw new CliError(Exit.interrupted, `interrupted: job ${jobId} goes on (mps jobs watch ${jobId}, or mps jobs cancel ${jobId})`);
      }
      throw err;
    });
  if (ctx.json) printJson(job);
  else printJob(job);
  failUnlessSucceeded(job);
  return job;
}

export function failUnlessSucceeded(job: Job): void {
  if (job.job_state === 'cancelled') throw new CliError(Exit.jobFailed, `job ${job.job_id} was cancelled`);
  if (job.result?.status === 'error') {
    throw new CliError(Exit.jobFailed, `job ${job.job_id} ended in error: ${job.result.error_message ?? 'no message'}`);
  }
}
