import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Watermark } from '../../lib/app/consistency';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventLog, LogSubscription } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { OutboundFetcher } from '../../lib/ports/outbound';
import type { Doc, ReadStore } from '../../lib/ports/read-store';
import type { SecretBox } from '../../lib/ports/secret-box';
import { createFairQueue, QUICK_MS } from './fair-queue';
import { attempt, handlersOf, nowIso, onDelivery, type Dispatching } from './attempt';

/**
 * The webhook dispatcher (DESIGN §3 Webhooks). A consumer of the log schedules a delivery when a
 * job with a `callback_url` stops or is cancelled; a loop finds due deliveries in the `deliveries`
 * read model and makes one attempt each (attempt.ts): claims it (a lease, fenced by attempt
 * number), POSTs the job document signed with the drive's secret, and records it. Retries come from the schedule in the
 * read model, never from the log redelivering. Several replicas share the work through the claims.
 */

export const WEBHOOK_GROUP = 'webhook-dispatcher';

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
  /**
   * Attempts in flight at once (default 32), per drive (8: what one tenant's dead receivers can
   * hold) and per host name of one drive (4). Drives, then their hosts, take turns (fair-queue.ts).
   */
  concurrency?: number;
  perDrive?: number;
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
  /** Opens the drives' sealed webhook secrets (lib/ports/secret-box.ts); plain ones from before sealing pass through. */
  secrets: SecretBox;
};

export type Dispatcher = {
  stop(): Promise<void>;
  subscription: LogSubscription | null;
  idle(): Promise<void>;
  /** Attempts in flight, the drives holding them and the most one drive holds (metrics). */
  slots(): { inFlight: number; drives: number; most: number };
};

export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18_000, 36_000, 36_000, 36_000, 36_000, 36_000, 36_000];

export async function start(deps: DispatcherDeps): Promise<Dispatcher> {
  const stopping = new AbortController();
  // Every attempt in flight listens to it: more than Node's default of ten.
  setMaxListeners(0, stopping.signal);
  const d: Dispatching = {
    deps,
    log: deps.logger.child({ component: 'webhook-dispatcher' }),
    stopping: stopping.signal,
    on: handlersOf(deps.store),
  };
  const alarm = createAlarm();
  const due = dueDeliveries(d, alarm.wake);
  const subscription = deps.schedules === false ? null : await scheduleFromLog(d, alarm.wake);
  const loop = pollDue(d, due, alarm);
  return {
    subscription,
    idle: due.idle,
    slots: due.slots,
    async stop() {
      stopping.abort(new Error('shutting down'));
      alarm.wake();
      await loop;
      await due.idle();
      await subscription?.close();
    },
  };
}

/**
 * The log's side: a job with a `callback_url` that stops or is cancelled gets its delivery
 * scheduled. A redelivered event schedules nothing more (one delivery per job, in its decider).
 */
function scheduleFromLog(d: Dispatching, wake: () => void): Promise<LogSubscription> {
  return d.deps.log.subscribe(
    WEBHOOK_GROUP,
    async (event) => {
      if (event.type !== 'JobStopped' && event.type !== 'JobCancelled') return;
      if (await scheduleDelivery(d, String(event.data.job_id))) wake();
    },
    { concurrency: 4, onFatal: d.deps.onFatal },
  );
}

/** False when the job is unknown or has no callback. */
async function scheduleDelivery(d: Dispatching, jobId: string): Promise<boolean> {
  const { state } = await d.on.jobs.load(jobId);
  if (state.status === 'none' || !state.job.callback_url) return false;
  const { job } = state;
  const delivery = {
    delivery_id: d.deps.ids.uuidv7(),
    job_id: jobId,
    drive_id: job.drive_id,
    project_id: job.project_id,
    url: job.callback_url!,
  };
  await onDelivery(
    d,
    jobId,
    { type: 'ScheduleDelivery', delivery, now: nowIso(d) },
    { partition_key: job.project_id, drive_id: job.drive_id },
  );
  return true;
}

type Alarm = ReturnType<typeof createAlarm>;

/** Between rounds the loop sleeps `pollMs`, or less when woken: a delivery was scheduled, or an attempt freed a slot. */
function createAlarm() {
  let wakeUp: (() => void) | null = null;
  return {
    wake: () => wakeUp?.(),
    async sleep(ms: number, signal: AbortSignal) {
      await Promise.race([sleep(ms, undefined, { signal }).catch(() => undefined), new Promise<void>((resolve) => (wakeUp = resolve))]);
      wakeUp = null;
    },
  };
}

/** Looks for due deliveries until the dispatcher stops. */
async function pollDue(d: Dispatching, due: DueDeliveries, alarm: Alarm): Promise<void> {
  while (!d.stopping.aborted) {
    try {
      await due.dispatch();
    } catch (err) {
      d.log.warn({ err }, 'could not look for due deliveries');
    }
    await alarm.sleep(d.deps.pollMs ?? 500, d.stopping);
    // The stores answer synchronously: without a turn of the event loop here, a busy loop would
    // starve every socket of the process.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

type DueDeliveries = ReturnType<typeof dueDeliveries>;

/**
 * Starts an attempt for each due delivery the fair queue gives (fair-queue.ts): drives in turn,
 * then their hosts in turn, one attempt per job at a time, at most `concurrency` in all,
 * `perDrive` per drive and `perHost` per host name of a drive. Deliveries another replica holds
 * are left out by `claimed_until`.
 */
function dueDeliveries(d: Dispatching, wake: () => void) {
  const queue = createFairQueue(d.deps.read, {
    concurrency: d.deps.concurrency ?? 32,
    perDrive: d.deps.perDrive ?? 8,
    perHost: d.deps.perHost ?? 4,
  });
  const running = new Set<Promise<void>>();

  const begin = (doc: Doc) => {
    queue.enter(doc);
    const started = Date.now();
    const run = attempt(d, { jobId: doc._id, driveId: String(doc.drive_id), projectId: String(doc.project_id) })
      .catch((err: unknown) => {
        d.log.error({ err, job_id: doc._id }, 'delivery attempt failed unexpectedly');
        return false;
      })
      .then((sent) => {
        running.delete(run);
        queue.leave(doc, sent && Date.now() - started < QUICK_MS);
        // A freed slot may serve a waiting delivery; an attempt that sent nothing (not ours) wakes no one.
        if (sent) wake();
      });
    running.add(run);
  };

  return {
    async dispatch(): Promise<void> {
      const round = queue.round(nowIso(d));
      for (let doc = await round.next(); doc; doc = await round.next()) begin(doc);
    },
    async idle() {
      await Promise.all(running);
    },
    slots: () => ({ inFlight: queue.inFlight(), ...queue.drivesInFlight() }),
  };
}
