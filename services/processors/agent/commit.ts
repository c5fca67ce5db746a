import { decideNext } from '../../../lib/app/command-handler';
import { projectEditedAppends } from '../../../lib/app/project-edits';
import { conversationDecider, type RevisionChange, type Turn } from '../../../lib/domain/conversation';
import { AppError } from '../../../lib/domain/errors';
import { streams } from '../../../lib/domain/ids';
import { jobDecider, type AgentResult, type JobResultOf } from '../../../lib/domain/job';
import type { StreamAppend } from '../../../lib/ports/event-store';
import { reservationIdOf, type JobContext } from '../job-runner';
import type { AgentWorkDeps } from './work';

/**
 * Writes a finished turn in one batch: [fence, edits…, the project's `ProjectEdited` (for its
 * `updated_at`), the turn on its conversation, the credits' settlement, the job's stop]. The fence, a progress event expecting the job stream's revision,
 * goes first: a cancel (or any write to the job since it was read) fails the batch before
 * anything else is written, and the job ends cancelled with nothing applied. The embedded store
 * commits a batch as one group and makes no append without those before it.
 *
 * Where the store can (the embedded store, `EventStore.appendAll`), the batch is written whole or
 * not at all: a composition another writer moved meanwhile, whichever edit it was, fails the
 * attempt to be retried (planned again on the composition as it now is), and nothing of the turn
 * is written; a job, conversation or balance that moved is read again and the batch decided anew.
 *
 * EventStoreDB makes the appends of a batch up to its first conflict, so there a composition
 * another writer moved meanwhile is handled by where it falls:
 * - the first edit: nothing of the turn is written, and the attempt fails to be retried (planned
 *   again on the composition as it now is);
 * - a later edit (a turn that changed several streams): what came before it is written and cannot
 *   be taken back. The turn is then recorded with exactly those revisions (so undo reverts them),
 *   charged, and the job stops with a `conflict` error saying what changed and what did not;
 * - the turn record (another turn of the conversation came first): recorded again on top of it;
 * - the settlement (the balance stream moved): settled on its own, and the engine stops the job.
 */

export type TurnToCommit = {
  readonly reserved: number;
  readonly used: number;
  readonly edits: readonly StreamAppend[];
  readonly revisions: readonly RevisionChange[];
  readonly turn: Omit<Turn, 'recorded_at' | 'revisions' | 'project_changed'>;
  readonly result: AgentResult;
};

type Ctx = JobContext<'agent'>;

export async function commitTurn(deps: AgentWorkDeps, ctx: Ctx, t: TurnToCommit): Promise<JobResultOf<'agent'>> {
  const { job } = ctx;
  const write = { newId: deps.ids.uuidv7, metadata: { partition_key: job.project_id, drive_id: job.drive_id, causation_id: job.job_id } };
  let pending = t.edits;
  let written: StreamAppend[] = [];
  // The edits whose `ProjectEdited` is not written yet: it goes right after the edits in the batch.
  let unmarked = t.edits;
  let result: JobResultOf<'agent'> = t.result;
  let response = t.turn.response;
  for (let tries = 0; tries < 10; tries++) {
    ctx.signal.throwIfAborted();
    const now = deps.clock.now().toISOString();
    const { state, revision } = await deps.on.jobs.load(job.job_id);
    if (state.status === 'cancelled') return waitForAbort(ctx);
    const progress = { type: 'ReportProgress' as const, attempt: ctx.attempt, label: 'applying the changes', percent: 100, now };
    const fence = decideNext(streams.job(job.job_id), jobDecider, state, revision, progress, write);
    if (fence.appends.length === 0) throw new AppError('unavailable', 'this attempt no longer holds the job', { retriable: true });
    const stop = { type: 'StopJob' as const, attempt: ctx.attempt, result, projectUrl: job.project_url, now };
    const stopping = decideNext(streams.job(job.job_id), jobDecider, fence.state, fence.revision, stop, write);
    const conversation = await deps.on.conversations.load(job.request.conversation_id);
    const revisions = pending === t.edits && written.length === 0 ? t.revisions : madeRevisions(t.revisions, written);
    const turn = { ...t.turn, response, project_changed: revisions.length > 0, revisions };
    const record = { type: 'RecordTurn' as const, turn, now };
    const recorded = decideNext(
      streams.conversation(job.request.conversation_id),
      conversationDecider,
      conversation.state,
      conversation.revision,
      record,
      write,
    );

    const marked = projectEditedAppends({ projectId: job.project_id, jobId: job.job_id, now }, unmarked, write);
    const between = [...fence.appends, ...pending, ...marked, ...recorded.appends];
    const reservation = { driveId: job.drive_id, reservationId: reservationIdOf(job.job_id, 'ai_credits', 'turn'), jobId: job.job_id };
    const settle = { ...reservation, kind: 'ai_credits' as const, amount: t.reserved, used: t.used, reserve: false };
    const whole = await deps.balances.reserveAndSettleWhole(settle, between, stopping.appends);
    if (whole) {
      if (whole.ok) return result;
      // Nothing was written. A composition that moved: plan again on it, whichever edit it was.
      const edit = whole.index - fence.appends.length;
      if (edit >= 0 && edit < pending.length) {
        throw new AppError('unavailable', 'a composition changed while the turn planned its edits; planning again', { retriable: true });
      }
      continue; // the job, the conversation or the balance moved: decide again on them as they are
    }
    const results = await deps.balances.reserveAndSettle(settle, between, stopping.appends);
    const failed = results.findIndex((r) => !r.ok);
    if (failed === -1 && results.length > between.length) return result;
    if (failed === 0) continue; // the job moved (a lease renewal): look again
    const editsFailed = failed - 1;
    if (failed !== -1 && editsFailed < pending.length) {
      if (written.length === 0 && editsFailed === 0) {
        throw new AppError('unavailable', 'a composition changed while the turn planned its edits; planning again', { retriable: true });
      }
      written = [...written, ...pending.slice(0, editsFailed)];
      unmarked = written; // the mark came after the edits: not written
      const message = `the turn changed ${named(written)}, but ${named(pending.slice(editsFailed))} changed meanwhile and was left as it was; undo reverts what the turn changed`;
      result = { status: 'error', error_code: 'conflict', error_message: message };
      response = message;
      pending = [];
      continue;
    }
    if (failed !== -1 && failed < between.length) {
      written = [...written, ...pending]; // every edit and its mark are written; the conversation moved: record on top of it
      pending = [];
      unmarked = [];
      continue;
    }
    // Everything but the settlement is written (the balance stream moved): settle on its own; the engine stops the job.
    await ctx.settle('ai_credits', 'turn', t.used);
    return result;
  }
  throw new AppError('unavailable', 'the job stream kept moving while the turn was written', { retriable: true });
}

/** "composition <id>, the project": what the appends wrote to, as a user reads it. */
const named = (appends: readonly StreamAppend[]) =>
  [...new Set(appends.map((a) => (a.streamId.startsWith('composition-') ? `composition ${a.streamId.slice(12)}` : 'the project')))].join(
    ', ',
  );

/** The revisions of the compositions whose appends were made: each composition's revision after its last made append. */
function madeRevisions(all: readonly RevisionChange[], made: readonly StreamAppend[]): RevisionChange[] {
  const after = new Map<string, number>();
  for (const a of made) {
    const base = a.expected === 'no_stream' ? -1 : (a.expected as number);
    after.set(a.streamId, base + a.events.length);
  }
  return all.flatMap((r) => {
    const revision = after.get(streams.composition(r.composition_id));
    return revision === undefined ? [] : [{ ...r, after: revision }];
  });
}

/** The job was cancelled before the turn was written: wait for the engine to see it (it aborts the signal), then stop. */
async function waitForAbort(ctx: Ctx): Promise<never> {
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) return resolve();
    ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  throw ctx.signal.reason;
}
