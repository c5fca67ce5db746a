import { decideNext } from '../../../lib/app/command-handler';
import { CREDITS, MAX_STEPS, MAX_TOOL_CALLS, maxTurnCredits, turnCredits } from '../../../lib/domain/agent/catalog';
import type { PlannedChange, ProjectModel } from '../../../lib/domain/agent/edits';
import { conversationDecider, type RecordedToolCall } from '../../../lib/domain/conversation';
import { AppError } from '../../../lib/domain/errors';
import { streams } from '../../../lib/domain/ids';
import { jobDecider, type AgentResult } from '../../../lib/domain/job';
import type { Balances } from '../../../lib/app/balances';
import type { AgentModel, ToolCall, TurnMessage } from '../../../lib/ports/agent-model';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { Clock, Ids } from '../../../lib/ports/clock';
import type { EventStore, StreamAppend } from '../../../lib/ports/event-store';
import type { ProcessorHandlers } from '../handlers';
import { createComposition, DEFAULT_SIZE } from '../import/compose';
import { reservationIdOf, type JobContext, type WorkOutcome } from '../job-runner';
import { turnMessages } from './messages';
import { projectModelLoader } from './project-model';
import { startTurnEdits, type TurnEdits } from './turn-edits';
import type { Toolset } from './toolset';

/**
 * One agent turn (issue 20 item 4): reserve the most the turn may cost, read the project and the
 * conversation, then ask the model and run its tool calls, at most MAX_STEPS steps, each tool
 * call planned on what the earlier ones left (turn-edits.ts). Nothing is written until the turn
 * ends; then one commit holds, in order, a fence on the job stream (a cancel that came first
 * makes it conflict and nothing is written), the edits at the revisions the turn read, the turn
 * on the conversation, the settlement of the credits at exactly what the turn used, and the
 * job's stop. A cancel between tool calls aborts `ctx.signal`: the turn stops with nothing
 * applied and the engine gives the reservation back.
 */

export type AgentWorkDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  blobs: BlobStore;
  balances: Balances;
  on: ProcessorHandlers;
  agent: {
    /** The AgentModel that answers for a catalog model (from configuration: models.ts). */
    modelFor(model: string): AgentModel;
    toolset: Toolset;
  };
};

type Ctx = JobContext<'agent'>;

export async function runTurn(deps: AgentWorkDeps, ctx: Ctx): Promise<WorkOutcome<'agent'>> {
  const { request, project_id: projectId } = ctx.job;
  if (request.new_project) await givePlaceholder(deps, ctx);
  const budget = await reserveCredits(deps, ctx);
  const model = await projectModelLoader(deps)(projectId);
  const { state: conversation } = await deps.on.conversations.load(request.conversation_id);
  if (!conversation.exists) throw new AppError('not_found', `conversation ${request.conversation_id} does not exist`, { retriable: false });
  const write = {
    newId: deps.ids.uuidv7,
    metadata: { partition_key: projectId, drive_id: ctx.job.drive_id, causation_id: ctx.job.job_id },
  };
  const edits = await startTurnEdits({ on: deps.on, ...write, now: () => deps.clock.now().toISOString(), jobId: ctx.job.job_id }, model);

  const turn = await converse(
    deps,
    ctx,
    model,
    edits,
    turnMessages(model, request.composition_id, conversation.turns, request.prompt),
    budget,
  );
  const used = turnCredits(request.cost, turn.calls.length);
  const result: AgentResult = {
    status: 'success',
    agent_response: turn.response,
    project_changed: edits.revisions().length > 0,
    media_seconds_used: 0,
    ai_credits_used: used,
    conversation_id: request.conversation_id,
    resolved_model: request.resolved_model,
  };
  const recorded = decideNext(
    streams.conversation(request.conversation_id),
    conversationDecider,
    conversation,
    (await deps.on.conversations.load(request.conversation_id)).revision,
    {
      type: 'RecordTurn',
      turn: {
        job_id: ctx.job.job_id,
        prompt: request.prompt,
        model: request.model,
        tool_calls: turn.calls,
        response: turn.response,
        project_changed: result.project_changed,
        revisions: edits.revisions(),
        ai_credits_used: used,
      },
      now: deps.clock.now().toISOString(),
    },
    write,
  );
  await commit(deps, ctx, { reserved: budget.reserved, used }, [...edits.appends(), ...recorded.appends], result);
  return { result, projectUrl: ctx.job.project_url };
}

// ---------------------------------------------------------------- credits

type Budget = { readonly reserved: number; readonly toolCalls: number };

/**
 * Reserves what the turn may cost at most, or what the drive has left when that is less but
 * covers the turn itself; tool calls are then bounded by what the reservation covers. Under any
 * number of concurrent turns the balance stream decides, so the balance never goes below zero.
 */
async function reserveCredits(deps: AgentWorkDeps, ctx: Ctx): Promise<Budget> {
  const { cost } = ctx.job.request;
  const left = (await deps.balances.show(ctx.job.drive_id)).ai_credits.left;
  const reserved = left === null ? maxTurnCredits(cost) : Math.min(maxTurnCredits(cost), Math.floor(left));
  if (reserved < CREDITS[cost].turn) {
    throw new AppError(
      'payment_required',
      `not enough AI credits: ${CREDITS[cost].turn} required and ${Math.max(0, left ?? 0)} available`,
      {
        retriable: false,
      },
    );
  }
  await ctx.reserve('ai_credits', 'turn', reserved);
  return { reserved, toolCalls: Math.min(MAX_TOOL_CALLS, Math.floor((reserved - CREDITS[cost].turn) / CREDITS[cost].toolCall)) };
}

// ---------------------------------------------------------------- the loop

type TurnOutcome = { readonly response: string; readonly calls: RecordedToolCall[] };

async function converse(
  deps: AgentWorkDeps,
  ctx: Ctx,
  start: ProjectModel,
  edits: TurnEdits,
  messages: TurnMessage[],
  budget: Budget,
): Promise<TurnOutcome> {
  const agent = deps.agent.modelFor(ctx.job.request.model);
  const tools = [...deps.agent.toolset.values()].map((t) => t.schema);
  const calls: RecordedToolCall[] = [];
  const summaries: string[] = [];
  let model = start;
  for (let step = 0; step < MAX_STEPS; step++) {
    ctx.signal.throwIfAborted();
    await ctx.progress(step === 0 ? 'planning' : `planning (step ${step + 1})`, (step / MAX_STEPS) * 90);
    const answer = await agent.next({ messages, tools, signal: ctx.signal });
    if (answer.kind === 'final') return { response: answer.text.trim() || describe(summaries), calls };
    messages.push({ role: 'assistant', content: answer.text, tool_calls: answer.calls });
    for (const call of answer.calls) {
      // Cancellation is looked at between tool calls: a cancelled turn applies nothing.
      ctx.signal.throwIfAborted();
      if (calls.length >= budget.toolCalls) {
        return { response: `${describe(summaries)} Stopped: the drive's AI credits cover no more tool calls in this turn.`.trim(), calls };
      }
      await ctx.progress(`running ${call.name}`, ((step + 0.5) / MAX_STEPS) * 90);
      const ran = await runTool(deps, ctx, model, edits, call);
      model = ran.model;
      if (ran.summary) summaries.push(ran.summary);
      calls.push({ id: call.id, name: call.name, arguments: JSON.stringify(call.arguments), result: ran.result });
      messages.push({ role: 'tool', tool_call_id: call.id, content: ran.result });
    }
  }
  return { response: `${describe(summaries)} (Stopped after ${MAX_STEPS} steps without a final answer.)`.trim(), calls };
}

const describe = (summaries: readonly string[]) => (summaries.length > 0 ? summaries.join(' ') : 'Nothing was changed.');

/** One tool call: its changes planned (all or none), and its result as the model reads it. A refusal is a result, not a failure. */
async function runTool(deps: AgentWorkDeps, ctx: Ctx, model: ProjectModel, edits: TurnEdits, call: ToolCall) {
  const tool = deps.agent.toolset.get(call.name);
  if (!tool) return { model, summary: null, result: JSON.stringify({ error: `there is no tool named ${call.name}` }) };
  let changes: readonly PlannedChange[];
  try {
    const outcome = await tool.run(model, call.arguments, { composition_id: ctx.job.request.composition_id, signal: ctx.signal });
    changes = outcome.changes;
    const next = edits.plan(changes);
    return {
      model: next,
      summary: outcome.summary,
      result: JSON.stringify({ summary: outcome.summary, ...(outcome.data !== undefined && { data: outcome.data }) }),
    };
  } catch (err) {
    if (err instanceof AppError && (err.code === 'invalid_input' || err.code === 'not_found')) {
      return { model, summary: null, result: JSON.stringify({ error: err.message }) };
    }
    throw err;
  }
}

// ---------------------------------------------------------------- the commit

/**
 * Writes the turn in one batch: [fence on the job stream, edits…, turn record, settlement, stop].
 * The fence (a progress event expecting the job's revision) goes first, so a cancel, or any write
 * to the job since it was read, makes the batch fail before anything else is written; a moved
 * composition fails it before the turn is recorded or charged, and the attempt is retried (planned
 * again on the composition as it now is). The embedded store commits the batch as one group, so
 * nothing comes between its appends.
 */
async function commit(
  deps: AgentWorkDeps,
  ctx: Ctx,
  credits: { reserved: number; used: number },
  writes: StreamAppend[],
  result: AgentResult,
): Promise<void> {
  const write = {
    newId: deps.ids.uuidv7,
    metadata: { partition_key: ctx.job.project_id, drive_id: ctx.job.drive_id, causation_id: ctx.job.job_id },
  };
  for (let tries = 0; tries < 10; tries++) {
    ctx.signal.throwIfAborted();
    const { state, revision } = await deps.on.jobs.load(ctx.job.job_id);
    const now = deps.clock.now().toISOString();
    if (state.status === 'cancelled') return waitForAbort(ctx);
    const fence = decideNext(
      streams.job(ctx.job.job_id),
      jobDecider,
      state,
      revision,
      { type: 'ReportProgress', attempt: ctx.attempt, label: 'applying the changes', percent: 100, now },
      write,
    );
    if (fence.appends.length === 0) throw new AppError('unavailable', 'this attempt no longer holds the job', { retriable: true });
    const stop = decideNext(
      streams.job(ctx.job.job_id),
      jobDecider,
      fence.state,
      fence.revision,
      { type: 'StopJob', attempt: ctx.attempt, result, projectUrl: ctx.job.project_url, now },
      write,
    );
    const reservation = {
      driveId: ctx.job.drive_id,
      reservationId: reservationIdOf(ctx.job.job_id, 'ai_credits', 'turn'),
      jobId: ctx.job.job_id,
      kind: 'ai_credits' as const,
    };
    const between = [...fence.appends, ...writes];
    const results = await deps.balances.reserveAndSettle(
      { ...reservation, amount: credits.reserved, used: credits.used, reserve: false },
      between,
      stop.appends,
    );
    const failed = results.findIndex((r) => !r.ok);
    if (failed === -1 && results.length > between.length) return;
    if (failed === 0) continue; // the job moved (a lease renewal, a cancel): look again
    if (failed !== -1 && failed < between.length) {
      throw new AppError('unavailable', 'a composition changed while the turn planned its edits; planning again', { retriable: true });
    }
    // The edits and the turn are written; the balance stream moved under the settlement: settle on its own, the engine stops the job.
    await ctx.settle('ai_credits', 'turn', credits.used);
    return;
  }
  throw new AppError('unavailable', 'the job stream kept moving while the turn was written', { retriable: true });
}

/** The job was cancelled before the turn was written: wait for the engine to see it (it aborts the signal), then stop. */
async function waitForAbort(ctx: Ctx): Promise<never> {
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) return resolve();
    ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  throw ctx.signal.reason;
}

// ---------------------------------------------------------------- new projects

/** A project made by the prompt starts with the empty placeholder composition, as an imported one does. */
async function givePlaceholder(deps: AgentWorkDeps, ctx: Ctx): Promise<void> {
  const { state } = await deps.on.projects.load(ctx.job.project_id);
  if (!state.exists) throw new AppError('not_found', `project ${ctx.job.project_id} no longer exists`, { retriable: false });
  const origin = `${ctx.job.job_id}#placeholder`;
  if (state.compositions.some((c) => c.origin === origin)) return;
  await createComposition(deps, ctx, state, origin, { name: state.project.name, clips: [], ...DEFAULT_SIZE });
}
