import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, Job } from '../../sdk/client';
import type { Extra } from './tool-kit';

/** Longest wait one tool call may ask for, and the wait when it does not say: clients often give up on a call after 60 s. */
export const MAX_WAIT_SECONDS = 600;
export const DEFAULT_WAIT_SECONDS = 45;

/** `job` is null only when the wait ran out of time without the service answering once. */
export type Waited = { job: Job | null; finished: boolean };

const isFinal = (job: Job) => job.job_state === 'stopped' || job.job_state === 'cancelled';

/**
 * Waits for the job for at most `seconds`, reporting its progress to the client when the call
 * carried a progressToken. Running out of time is an answer (`finished: false`, the job as it is
 * then), not an error: the model can wait again. The client cancelling the call ends the wait.
 */
export async function waitBounded(client: Client, jobId: string, seconds: number, extra: Extra): Promise<Waited> {
  const timeout = AbortSignal.timeout(seconds * 1000);
  const signal = AbortSignal.any([timeout, extra.signal]);
  const progress = progressReporter(extra);
  let latest: Job | undefined;
  try {
    const job = await client.waitForJob(jobId, {
      signal,
      onUpdate: (j) => {
        latest = j;
        progress?.report(j);
      },
    });
    return { job, finished: true };
  } catch (err) {
    if (!timeout.aborted || extra.signal.aborted) throw err;
    return { job: await jobAsItIs(client, jobId, latest, extra.signal), finished: false };
  } finally {
    // A notification still being written when the answer goes out would reach the client after
    // the call is over, for a token it no longer knows.
    await progress?.sent();
  }
}

/** How long the job is read for once the wait is out of time: the answer is due already. */
export const LAST_LOOK_MS = 2000;

/**
 * The job as it is once the wait ran out of time, read briefly: a service that answers nothing
 * must not hold the call past its timeout. Unfinished either way (the wait would have seen the
 * end); the last state seen stands in when the read fails, null when none was seen.
 */
async function jobAsItIs(client: Client, jobId: string, latest: Job | undefined, cancelled: AbortSignal): Promise<Job | null> {
  try {
    return await client.getJob(jobId, { signal: AbortSignal.any([AbortSignal.timeout(LAST_LOOK_MS), cancelled]) });
  } catch (err) {
    if (cancelled.aborted) throw err;
    return latest ?? null;
  }
}

/** A bounded wait's answer for people and models. */
export function waitedSummary(jobId: string, { job, finished }: Waited): string {
  if (job) return jobSummary(job, finished);
  return `Job ${jobId}: the service did not answer in time, so its state is unknown; call wait_for_job again later.`;
}

export type ProgressReporter = { report: (job: Job) => void; sent: () => Promise<void> };

/**
 * How long after its last progress notification a call's answer is held. The TypeScript SDK's
 * client hands a notification to its handler a microtask after reading it, but settles a response
 * at once: when both come in one read of the pipe, the response retires the token first and the
 * client reports the notification as a protocol error and drops it (modelcontextprotocol/
 * typescript-sdk#2580, open). A job that ends just after a notification made that likely.
 */
export const PROGRESS_ANSWER_GAP_MS = 50;

/**
 * MCP progress notifications for a job's updates, when the client asked for them. The spec wants
 * `progress` to increase with each notification, so a percent no higher than the last is skipped;
 * the job's end is 100. `sent()` resolves once every notification so far is written, and
 * `PROGRESS_ANSWER_GAP_MS` after the last of them.
 */
export function progressReporter(extra: Extra): ProgressReporter | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  let last = -1;
  let writtenAt: number | null = null;
  let writing = Promise.resolve();
  const report = (job: Job) => {
    const percent = isFinal(job) ? 100 : (job.progress?.percent ?? 0);
    if (percent <= last) return;
    last = percent;
    const label = job.progress?.label ? `: ${job.progress.label}` : '';
    const notification = {
      method: 'notifications/progress' as const,
      params: { progressToken: token, progress: percent, total: 100, message: `${job.job_state}${label}` },
    };
    // In order, one after the other; a client gone mid-wait fails the call's own answer as well.
    writing = writing
      .then(() => extra.sendNotification(notification))
      .then(() => void (writtenAt = performance.now()))
      .catch(() => undefined);
  };
  const sent = async () => {
    await writing;
    if (writtenAt === null) return;
    // Timers may fire a millisecond early against performance.now(): wait until the gap has passed.
    for (
      let hold = writtenAt + PROGRESS_ANSWER_GAP_MS - performance.now();
      hold > 0;
      hold = writtenAt + PROGRESS_ANSWER_GAP_MS - performance.now()
    ) {
      await sleep(Math.ceil(hold));
    }
  };
  return { report, sent };
}

/** One line about a job: its type, state, progress or result, and what the result points to. */
export function jobSummary(job: Job, finished = isFinal(job)): string {
  const head = `Job ${job.job_id} (${job.job_type}, project ${job.project_id}) is ${job.job_state}`;
  if (!finished) {
    const progress = job.progress ? ` at ${Math.round(job.progress.percent)}% (${job.progress.label})` : '';
    return `${head}${progress}; call wait_for_job to wait for it.`;
  }
  const r = job.result;
  if (!r) return `${head}.`;
  const parts = [`result ${r.status}`];
  if (r.error_message) parts.push(`error: ${r.error_message}`);
  if (r.created_compositions?.length) parts.push(`compositions: ${r.created_compositions.map((c) => `${c.name} (${c.id})`).join(', ')}`);
  if (r.agent_response) parts.push(`agent: ${r.agent_response}`);
  if (r.share_url) parts.push(`share URL: ${r.share_url}`);
  const text = `${head}, ${parts.join('; ')}`;
  // The agent's own words often end a sentence already.
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
