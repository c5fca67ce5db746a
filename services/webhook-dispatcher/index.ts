import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { handleCommand, loadState } from '../../lib/app/command-handler';
import { driveDecider, jobDecider } from '../../lib/app/deciders';
import { positionValue, type Watermark } from '../../lib/app/consistency';
import { foldDocument } from '../../lib/app/projection';
import { signWebhook } from '../../lib/app/webhook-signature';
import { deliveryDecider, NOT_CLAIMABLE, type DeliveryCommand } from '../../lib/domain/delivery';
import { AppError } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventLog, LogSubscription } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { OutboundFetcher } from '../../lib/ports/outbound';
import type { ReadStore } from '../../lib/ports/read-store';
import { endedAt, evolveJobDoc, renderJob } from '../../lib/read-models/jobs';
import { DELIVERIES } from '../../lib/read-models/deliveries';

/**
 * The webhook dispatcher (DESIGN §3 Webhooks). A consumer of the log schedules a delivery when a
 * job with a `callback_url` stops or is cancelled; a loop finds due deliveries in the `deliveries`
 * read model, claims each attempt (a lease, fenced by attempt number), POSTs the job document
 * signed with the drive's secret, and records the attempt. Retries come from the schedule in the
 * read model, never from the log redelivering. Several replicas share the work through the claims.
 */

export const WEBHOOK_GROUP = 'webhook-dispatcher';
const USER_AGENT = 'Servicebot/1.0 (webhooks)';

export type DispatcherDeps = {
  store: EventStore;
  read: ReadStore;
  log: EventLog;
  fetcher: OutboundFetcher;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  workerId: string;
  /** Seconds between failed attempts (WEBHOOK_RETRY_SCHEDULE). */
  scheduleSeconds: readonly number[];
  /** How often to look for due deliveries; default 500 ms. */
  pollMs?: number;
  /** Attempts in flight at once, and per receiving host. */
  concurrency?: number;
  perHost?: number;
  /** A receiver has this long to answer with a 2xx (DESIGN: 15 s). */
  timeoutMs?: number;
  onFatal?: (err: Error) => void;
  /**
   * Whether this instance also schedules deliveries from the log (default). Replicas in one
   * embedded process must not both subscribe one group; a second one may only dispatch.
   */
  schedules?: boolean;
  /**
   * The projector's watermark, where this process projects: a job's document is sent only once
   * what the job changed is projected, so a receiver that reads the project at once sees it
   * (read-your-writes, lib/app/consistency.ts). Without it the document is sent as folded.
   */
  projected?: Watermark;
};

/** How long an attempt waits for the job's effects to be projected before it sends all the same. */
const EFFECTS_WAIT_MS = 5_000;

export type Dispatcher = { stop(): Promise<void>; subscription: LogSubscription | null; idle(): Promise<void> };

export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18_000, 36_000, 36_000, 36_000, 36_000, 36_000, 36_000];

export async function start(deps: DispatcherDeps): Promise<Dispatcher> {
  const log = deps.logger.child({ component: 'webhook-dispatcher' });
  const stopping = new AbortController();
  // Every attempt in flight listens to it: more than Node's default of ten.
  setMaxListeners(0, stopping.signal);
  const inFlight = new Map<string, Promise<void>>(); // by job id
  const byHost = new Map<string, number>();
  const concurrency = deps.concurrency ?? 16;
  const perHost = deps.perHost ?? 4;
  const now = () => deps.clock.now().toISOString();
  const delivery = (jobId: string, command: DeliveryCommand, metadata: { partition_key: string; drive_id?: string }) =>
    handleCommand(deps.store, streams.delivery(jobId), deliveryDecider, command, { newId: deps.ids.uuidv7, metadata });

  const subscription =
    deps.schedules === false
      ? null
      : await deps.log.subscribe(
          WEBHOOK_GROUP,
          async (event) => {
            if (event.type !== 'JobStopped' && event.type !== 'JobCancelled') return;
            const jobId = String(event.data.job_id);
            const { state } = await loadState(deps.store, streams.job(jobId), jobDecider);
            if (state.status === 'none' || !state.job.callback_url) return;
            const { job } = state;
            await delivery(
              jobId,
              {
                type: 'ScheduleDelivery',
                delivery: {
                  delivery_id: deps.ids.uuidv7(),
                  job_id: jobId,
                  drive_id: job.drive_id,
                  project_id: job.project_id,
                  url: job.callback_url!,
                },
                now: now(),
              },
              { partition_key: job.project_id, drive_id: job.drive_id },
            );
            wake();
          },
          { concurrency: 4, onFatal: deps.onFatal },
        );

  let wakeUp: (() => void) | null = null;
  const wake = () => wakeUp?.();
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      try {
        await dispatchDue();
      } catch (err) {
        log.warn({ err }, 'could not look for due deliveries');
      }
      await Promise.race([
        sleep(deps.pollMs ?? 500, undefined, { signal: stopping.signal }).catch(() => undefined),
        new Promise<void>((resolve) => (wakeUp = resolve)),
      ]);
      wakeUp = null;
      // The stores answer synchronously: without a turn of the event loop here, a busy loop would
      // starve every socket of the process.
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();

  async function dispatchDue(): Promise<void> {
    if (inFlight.size >= concurrency) return;
    const due = await deps.read.find(
      DELIVERIES,
      { state: 'pending', due_at: { $lte: now() } },
      { sort: [['due_at', 1]], limit: concurrency * 4 },
    );
    for (const doc of due) {
      if (inFlight.size >= concurrency) return;
      const jobId = doc._id;
      const host = hostOf(String(doc.url));
      if (inFlight.has(jobId) || (byHost.get(host) ?? 0) >= perHost) continue; // a slow host waits its turn, others go on
      byHost.set(host, (byHost.get(host) ?? 0) + 1);
      const run = attempt(jobId, String(doc.drive_id), String(doc.project_id))
        .catch((err: unknown) => {
          log.error({ err, job_id: jobId }, 'delivery attempt failed unexpectedly');
          return false;
        })
        .then((sent) => {
          inFlight.delete(jobId);
          const left = (byHost.get(host) ?? 1) - 1;
          if (left === 0) byHost.delete(host);
          else byHost.set(host, left);
          // A freed slot may serve a waiting delivery; an attempt that sent nothing (not ours) wakes no one.
          if (sent) wake();
        });
      inFlight.set(jobId, run);
    }
  }

  /** One attempt; resolves whether something was sent. */
  async function attempt(jobId: string, driveId: string, projectId: string): Promise<boolean> {
    const timeoutMs = deps.timeoutMs ?? 15_000;
    const metadata = { partition_key: projectId, drive_id: driveId };
    let claimed;
    try {
      claimed = await delivery(
        jobId,
        { type: 'ClaimDelivery', workerId: deps.workerId, leaseMs: timeoutMs * 2 + 10_000, now: now() },
        metadata,
      );
    } catch (err) {
      if (err instanceof AppError && err.options.extra?.state === NOT_CLAIMABLE) return false; // another replica has it, or it is not due yet
      throw err;
    }
    const state = claimed.state;
    if (!state.exists || !state.claim) return false;
    const { attempt: n } = state.claim;
    const { delivery_id, url } = state.delivery;
    // The document as GET /jobs/{job_id} renders it now, from the job's own stream.
    const job = foldDocument(await deps.store.readStream(streams.job(jobId)), evolveJobDoc);
    const { state: drive } = await loadState(deps.store, streams.drive(driveId), driveDecider);
    if (!job || !drive.exists) return false;
    const ended = endedAt(job);
    if (ended !== null && deps.projected && !(await deps.projected.waitFor(positionValue(ended), EFFECTS_WAIT_MS))) {
      log.warn({ job_id: jobId, position: ended }, "the job's effects were not projected in time; sending its document all the same");
    }
    const body = JSON.stringify(renderJob(job));
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      ...signWebhook({ id: delivery_id, timestamp: Math.floor(deps.clock.now().getTime() / 1000), body }, drive.webhookSecret),
    };
    const started = Date.now();
    let result: { status: number } | { error: string };
    try {
      const answer = await deps.fetcher.post(url, { body, headers, timeoutMs, signal: stopping.signal });
      result = { status: answer.status };
    } catch (err) {
      if (stopping.signal.aborted) return false; // shutting down: the lease lapses and the attempt is made again
      result = { error: err instanceof Error ? err.message : String(err) };
    }
    const recorded = await delivery(
      jobId,
      { type: 'RecordAttempt', attempt: n, result, durationMs: Date.now() - started, scheduleSeconds: deps.scheduleSeconds, now: now() },
      metadata,
    );
    const outcome = recorded.events[0]?.type === 'DeliveryAttempted' ? recorded.events[0].data : null;
    log.info(
      { job_id: jobId, delivery_id, attempt: n, ...result, outcome: outcome?.outcome, next_attempt_at: outcome?.next_attempt_at },
      'webhook attempt',
    );
    return true;
  }

  return {
    subscription,
    async idle() {
      await Promise.all(inFlight.values());
    },
    async stop() {
      stopping.abort(new Error('shutting down'));
      wake();
      await loop;
      await Promise.all(inFlight.values());
      await subscription?.close();
    },
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
