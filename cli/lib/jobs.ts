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
  return followJob(ctx, client, jobId).report();
}

export type FollowedJob = {
  /** Prints the state reached so far and each change from now on, then the final job (as `waitAndReport`). */
  report(): Promise<Job>;
  /** Stops following (the command failed before `report`); the job itself goes on. */
  cancel(): void;
};

/**
 * Follows the job's changes from now on, quietly until `report`: `mps import --wait` opens the
 * job's event stream while its files upload (a progress bar owns the terminal meanwhile), so the
 * job's stop is seen as it happens, not after a new connection once the last byte is sent.
 */
export function followJob(ctx: Context, client: Client, jobId: string): FollowedJob {
  const stopped = new AbortController();
  const stop = () => stopped.abort();
  ctx.signal.addEventListener('abort', stop, { once: true });
  let reporting = false;
  let latest: Job | undefined;
  const print = (j: Job) => {
    if (!ctx.json) note(`${j.job_id}: ${jobLine(j)}`);
  };
  const done = client.waitForJob(jobId, {
    signal: stopped.signal,
    onUpdate: (j) => {
      latest = j;
      if (reporting) print(j);
    },
  });
  // Until `report` awaits it, a failure (a cancel among them) is nobody's to hear.
  done.catch(() => undefined);
  return {
    cancel: stop,
    async report() {
      reporting = true;
      if (latest) print(latest);
      const job = await done
        .catch((err: unknown) => {
          // Ctrl-C stops the waiting, not the job: say how to find it again.
          if (ctx.signal.aborted) {
            throw new CliError(
              Exit.interrupted,
              `interrupted: job ${jobId} goes on (mps jobs watch ${jobId}, or mps jobs cancel ${jobId})`,
            );
          }
          throw err;
        })
        .finally(() => ctx.signal.removeEventListener('abort', stop));
      if (ctx.json) printJson(job);
      else printJob(job);
      failUnlessSucceeded(job);
      return job;
    },
  };
}

export function failUnlessSucceeded(job: Job): void {
  if (job.job_state === 'cancelled') throw new CliError(Exit.jobFailed, `job ${job.job_id} was cancelled`);
  if (job.result?.status === 'error') {
    throw new CliError(Exit.jobFailed, `job ${job.job_id} ended in error: ${job.result.error_message ?? 'no message'}`);
  }
}
