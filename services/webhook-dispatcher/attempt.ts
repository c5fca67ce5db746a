import type { Logger } from 'pino';
import { commandHandler } from '../../lib/app/command-handler';
import { positionValue } from '../../lib/app/consistency';
import { driveDecider } from '../../lib/domain/tenancy';
import { foldDocument } from '../../lib/app/projection';
import { signWebhook } from '../../lib/app/webhook-signature';
import { deliveryDecider, NOT_CLAIMABLE, type DeliveryCommand, type RecordAttempt } from '../../lib/domain/delivery';
import { AppError } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import { jobDecider } from '../../lib/domain/job';
import type { EventStore } from '../../lib/ports/event-store';
import { endedAt, evolveJobDoc, renderJob } from '../../lib/read-models/jobs';
import type { DispatcherDeps } from './index';

/**
 * One delivery attempt: claim it, fold the job's document, wait until what the job changed is
 * projected, sign, post, record. The claim is a lease fenced by attempt number, so of two
 * dispatchers only the one holding the claim records an outcome; a crash after the receiver's 2xx
 * and before the record sends that attempt again (at least once).
 */

const USER_AGENT = 'Servicebot/1.0 (webhooks)';

/** How long an attempt waits for the job's effects to be projected before it sends all the same. */
const EFFECTS_WAIT_MS = 5_000;

/** What the dispatcher's steps share; `stopping` aborts once, when the dispatcher stops. */
export type Dispatching = {
  readonly deps: DispatcherDeps;
  readonly log: Logger;
  readonly stopping: AbortSignal;
  /** The handlers of the streams it reads and writes, built once per dispatcher (`handlersOf`). */
  readonly on: DispatchHandlers;
};

export const handlersOf = (store: EventStore) => ({
  jobs: commandHandler(store, jobDecider, streams.job),
  deliveries: commandHandler(store, deliveryDecider, streams.delivery),
  drives: commandHandler(store, driveDecider, streams.drive),
});

export type DispatchHandlers = ReturnType<typeof handlersOf>;

/** A due delivery as the `deliveries` read model names it. */
export type DueDelivery = { readonly jobId: string; readonly driveId: string; readonly projectId: string };

type Metadata = { partition_key: string; drive_id?: string };
type Claim = { readonly attempt: number; readonly deliveryId: string; readonly url: string };

export const nowIso = (d: Dispatching): string => d.deps.clock.now().toISOString();

/** Every change to a delivery goes through its decider, on the delivery's own stream. */
export const onDelivery = (d: Dispatching, jobId: string, command: DeliveryCommand, metadata: Metadata) =>
  d.on.deliveries.handle(jobId, command, { newId: d.deps.ids.uuidv7, metadata });

/** One attempt; resolves whether something was sent. */
export async function attempt(d: Dispatching, due: DueDelivery): Promise<boolean> {
  const timeoutMs = d.deps.timeoutMs ?? 15_000;
  const metadata = { partition_key: due.projectId, drive_id: due.driveId };
  const claim = await claimAttempt(d, due.jobId, timeoutMs, metadata);
  if (!claim) return false;
  const document = await jobDocument(d, due);
  if (!document) return false;
  const headers = signedHeaders(d, claim.deliveryId, document.body, document.secret);
  const started = Date.now();
  const result = await post(d, claim.url, document.body, headers, timeoutMs);
  if (!result) return false; // shutting down: the lease lapses and the attempt is made again
  await recordAttempt(d, due.jobId, claim, { result, durationMs: Date.now() - started }, metadata);
  return true;
}

/** The lease outlasts the post's deadline twice over; null when the attempt is not this dispatcher's to make. */
async function claimAttempt(d: Dispatching, jobId: string, timeoutMs: number, metadata: Metadata): Promise<Claim | null> {
  let claimed;
  try {
    claimed = await onDelivery(
      d,
      jobId,
      { type: 'ClaimDelivery', workerId: d.deps.workerId, leaseMs: timeoutMs * 2 + 10_000, now: nowIso(d) },
      metadata,
    );
  } catch (err) {
    if (err instanceof AppError && err.options.extra?.state === NOT_CLAIMABLE) return null; // another replica has it, or it is not due yet
    throw err;
  }
  const { state } = claimed;
  if (!state.exists || !state.claim) return null;
  return { attempt: state.claim.attempt, deliveryId: state.delivery.delivery_id, url: state.delivery.url };
}

/**
 * The document as GET /jobs/{job_id} renders it now, folded from the job's own stream, with the
 * drive's current secret (a rotated secret signs the next attempt). Null when either is gone.
 */
async function jobDocument(d: Dispatching, due: DueDelivery): Promise<{ body: string; secret: string } | null> {
  const job = foldDocument(await d.deps.store.readStream(streams.job(due.jobId)), evolveJobDoc);
  const { state: drive } = await d.on.drives.load(due.driveId);
  if (!job || !drive.exists) return null;
  await effectsProjected(d, due.jobId, endedAt(job));
  return { body: JSON.stringify(renderJob(job)), secret: d.deps.secrets.open(drive.webhookSecret, due.driveId) };
}

/**
 * A receiver that reads the project as soon as the webhook arrives sees what the job changed
 * (read-your-writes, lib/app/consistency.ts): the document waits, bounded, for the projector's
 * watermark to pass the job's end. Without `projected` it is sent as folded.
 */
async function effectsProjected(d: Dispatching, jobId: string, ended: string | null): Promise<void> {
  if (ended === null || !d.deps.projected) return;
  if (await d.deps.projected.waitFor(positionValue(ended), EFFECTS_WAIT_MS)) return;
  d.log.warn({ job_id: jobId, position: ended }, "the job's effects were not projected in time; sending its document all the same");
}

/** Standard Webhooks: `webhook-id` is the delivery id, stable across attempts, so receivers de-duplicate on it. */
function signedHeaders(d: Dispatching, deliveryId: string, body: string, secret: string): Record<string, string> {
  const timestamp = Math.floor(d.deps.clock.now().getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    ...signWebhook({ id: deliveryId, timestamp, body }, secret),
  };
}

/** Through the outbound guard (checked again at delivery, no redirects); null when the dispatcher is stopping. */
async function post(
  d: Dispatching,
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<RecordAttempt['result'] | null> {
  try {
    const answer = await d.deps.fetcher.post(url, { body, headers, timeoutMs, signal: d.stopping });
    return { status: answer.status };
  } catch (err) {
    if (d.stopping.aborted) return null;
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/** Only the claim's attempt is recorded (fenced); the decider schedules the next one from `scheduleSeconds`. */
async function recordAttempt(
  d: Dispatching,
  jobId: string,
  claim: Claim,
  made: { result: RecordAttempt['result']; durationMs: number },
  metadata: Metadata,
): Promise<void> {
  const { result, durationMs } = made;
  const command = {
    type: 'RecordAttempt' as const,
    attempt: claim.attempt,
    result,
    durationMs,
    scheduleSeconds: d.deps.scheduleSeconds,
    now: nowIso(d),
  };
  const recorded = await onDelivery(d, jobId, command, metadata);
  const outcome = recorded.events[0]?.type === 'DeliveryAttempted' ? recorded.events[0].data : null;
  d.log.info(
    {
      job_id: jobId,
      delivery_id: claim.deliveryId,
      attempt: claim.attempt,
      ...result,
      outcome: outcome?.outcome,
      next_attempt_at: outcome?.next_attempt_at,
    },
    'webhook attempt',
  );
}
