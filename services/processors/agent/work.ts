import { CREDITS, MAX_STEPS, MAX_TOOL_CALLS, maxTurnCredits, turnCredits } from '../../../lib/domain/agent/catalog';
import type { PlannedChange, ProjectModel } from '../../../lib/domain/agent/edits';
import type { RecordedToolCall, Turn } from '../../../lib/domain/conversation';
import { AppError } from '../../../lib/domain/errors';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentResult } from '../../../lib/domain/job';
import { agentDisabled } from '../../../lib/domain/tenancy';
import type { Balances } from '../../../lib/app/balances';
import type { AgentModel, ToolCall, TurnMessage } from '../../../lib/ports/agent-model';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { Clock, Ids } from '../../../lib/ports/clock';
import type { EventStore } from '../../../lib/ports/event-store';
import type { ProcessorHandlers } from '../handlers';
import { createComposition, DEFAULT_SIZE } from '../import/compose';
import type { JobContext, WorkOutcome } from '../job-runner';
import { commitTurn } from './commit';
import { turnMessages } from './messages';
import { projectModelLoader } from './project-model';
import { startTurnEdits, type TurnEdits } from './turn-edits';
import { turnToolContext } from './tool-context';
import type { ToolContext, Toolset } from './toolset';

/**
 * One agent turn (issue 20 item 4): reserve the most the turn may cost, read the project and the
 * conversation, then ask the model and run its tool calls, at most MAX_STEPS steps, each tool
 * call planned on what the earlier ones left (turn-edits.ts). Nothing is written until the turn
 * ends; then one commit writes the edits at the revisions the turn read, the turn on its
 * conversation, the credits settled at exactly what the turn used, and the job's stop (commit.ts).
 * A cancel between tool calls aborts `ctx.signal`: the turn stops with nothing
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
  const { state: conversation } = await deps.on.conversations.load(request.conversation_id);
  if (!conversation.exists) throw new AppError('not_found', `conversation ${request.conversation_id} does not exist`, { retriable: false });
  // An earlier attempt wrote the turn and ended before the job's stop (its settlement met a moved
  // balance stream, then the process died): finish that turn, never run it again.
  const written = conversation.turns.find((t) => t.job_id === ctx.job.job_id);
  if (written) return finishWritten(ctx, written);
  await refuseIfAgentDisabled(deps, ctx);
  if (request.new_project) await givePlaceholder(deps, ctx);
  const budget = await reserveCredits(deps, ctx);
  const model = await projectModelLoader(deps)(projectId);
  const write = {
    newId: deps.ids.uuidv7,
    metadata: { partition_key: projectId, drive_id: ctx.job.drive_id, causation_id: ctx.job.job_id },
  };
  const edits = await startTurnEdits({ on: deps.on, ...write, now: () => deps.clock.now().toISOString(), jobId: ctx.job.job_id }, model);
  const tools = {
    ...(await turnToolContext(deps, projectId, conversation.turns)),
    composition_id: request.composition_id,
    signal: ctx.signal,
  };

  const turn = await converse(
    deps,
    ctx,
    model,
    edits,
    tools,
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
  const committed = await commitTurn(deps, ctx, {
    reserved: budget.reserved,
    used,
    edits: edits.appends(),
    revisions: edits.revisions(),
    turn: {
      job_id: ctx.job.job_id,
      prompt: request.prompt,
      model: request.model,
      tool_calls: turn.calls,
      response: turn.response,
      ai_credits_used: used,
    },
    result,
  });
  return { result: committed, projectUrl: ctx.job.project_url };
}

async function finishWritten(ctx: Ctx, turn: Turn): Promise<WorkOutcome<'agent'>> {
  await ctx.settle('ai_credits', 'turn', turn.ai_credits_used);
  const result: AgentResult = {
    status: 'success',
    agent_response: turn.response,
    project_changed: turn.project_changed,
    media_seconds_used: 0,
    ai_credits_used: turn.ai_credits_used,
    conversation_id: ctx.job.request.conversation_id,
    resolved_model: ctx.job.request.resolved_model,
  };
  return { result, projectUrl: ctx.job.project_url };
}

/**
 * The drive's admin may disable the agent after a prompt was accepted (`admin drive update
 * --agent-disabled`): a turn not started yet is then refused as the POST would have been, before
 * anything is reserved or changed, so disabling stops the spending of prompts already queued.
 */
async function refuseIfAgentDisabled(deps: AgentWorkDeps, ctx: Ctx): Promise<void> {
  const { state } = await deps.on.drives.load(ctx.job.drive_id);
  if (agentDisabled(state)) {
    throw new AppError(
      'forbidden',
      'the drive admin disabled agent usage on this drive after the prompt was accepted; nothing was changed',
      {
        retriable: false,
      },
    );
  }
}

// ---------------------------------------------------------------- credits

type Budget = { readonly reserved: number; readonly toolCalls: number };

/**
 * Reserves what the turn may cost at most, or what the drive has left when that is less but
 * covers the turn itself; tool calls are then bounded by what the reservation covers. Under any
 * number of concurrent turns the balance stream decides, so the balance never goes below zero.
 */
async function reserveCredits(deps: AgentWorkDeps, ctx: Ctx): Promise<Budget> {
  const { cost, model } = ctx.job.request;
  // A retried attempt gives back what an earlier one reserved, so what is left counts it again.
  if (ctx.attempt > 1) await ctx.release('ai_credits', 'turn', 'the attempt is retried');
  const least = CREDITS[cost].turn;
  const since = Date.now();
  for (;;) {
    try {
      // Its most, or what is left: decided on the balance stream, so turns at once never overdraw.
      const reserved = await ctx.reserve('ai_credits', 'turn', maxTurnCredits(cost), least);
      return { reserved, toolCalls: Math.min(MAX_TOOL_CALLS, Math.floor((reserved - least) / CREDITS[cost].toolCall)) };
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'payment_required')) throw err;
      const credits = (await deps.balances.show(ctx.job.drive_id)).ai_credits;
      // Other turns hold credits and give back what they do not use when they settle: wait for them, a while.
      if (credits.reserved > 0 && Date.now() - since < HELD_WAIT_MS) {
        await sleep(HELD_POLL_MS, undefined, { signal: ctx.signal });
        continue;
      }
      const available = Math.max(0, Math.floor(credits.left ?? 0));
      throw new AppError(
        'payment_required',
        `not enough AI credits: ${least} required (model ${model}, cost ${cost}) and ${available} available`,
        {
          retriable: false,
        },
      );
    }
  }
}

/** How long a turn waits for credits other turns of the drive hold (reserved, not yet settled), and how often it looks. */
const HELD_WAIT_MS = 60_000;
const HELD_POLL_MS = 250;

// ---------------------------------------------------------------- the loop

type TurnOutcome = { readonly response: string; readonly calls: RecordedToolCall[] };

async function converse(
  deps: AgentWorkDeps,
  ctx: Ctx,
  start: ProjectModel,
  edits: TurnEdits,
  toolContext: ToolContext,
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
    if (answer.kind === 'final') return { response: capped(answer.text.trim() || describe(summaries), RESPONSE_MAX), calls };
    messages.push({ role: 'assistant', content: answer.text, tool_calls: answer.calls });
    for (const call of answer.calls) {
      // Cancellation is looked at between tool calls: a cancelled turn applies nothing.
      ctx.signal.throwIfAborted();
      if (calls.length >= budget.toolCalls) {
        const why =
          budget.toolCalls >= MAX_TOOL_CALLS
            ? `a turn makes at most ${MAX_TOOL_CALLS} tool calls; ask again for the rest.`
            : "the drive's AI credits cover no more tool calls in this turn.";
        return { response: capped(`${describe(summaries)} Stopped: ${why}`.trim(), RESPONSE_MAX), calls };
      }
      await ctx.progress(`running ${call.name}`, ((step + 0.5) / MAX_STEPS) * 90);
      const ran = await runTool(deps, toolContext, model, edits, call);
      model = ran.model;
      if (ran.summary) summaries.push(ran.summary);
      calls.push({
        id: call.id,
        name: call.name,
        arguments: capped(JSON.stringify(call.arguments), RECORDED_MAX),
        result: capped(ran.result, RECORDED_MAX),
      });
      messages.push({ role: 'tool', tool_call_id: call.id, content: ran.result });
    }
  }
  return {
    response: capped(`${describe(summaries)} (Stopped after ${MAX_STEPS} steps without a final answer.)`.trim(), RESPONSE_MAX),
    calls,
  };
}

/**
 * Events stay well under 64 KB (DESIGN §1): what a turn records of each tool call's arguments and
 * result (the model read them whole), and its response, are cut to these many characters.
 */
const RECORDED_MAX = 1000;
const RESPONSE_MAX = 4000;
const capped = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** The tools' summaries as sentences ("Added 1 marker at 0:00.0. Renamed Cut to Intro."). */
const describe = (summaries: readonly string[]) =>
  summaries.length > 0 ? summaries.map((s) => (/[.!?]$/.test(s.trim()) ? s.trim() : `${s.trim()}.`)).join(' ') : 'Nothing was changed.';

/** What a tool or the composition decider answers about a call's arguments or changes: the model's to read, not the job's failure. */
const REFUSALS = new Set(['invalid_input', 'not_found', 'unprocessable_entity']);

/** One tool call: its changes planned (all or none), and its result as the model reads it. A refusal is a result, not a failure. */
async function runTool(deps: AgentWorkDeps, toolContext: ToolContext, model: ProjectModel, edits: TurnEdits, call: ToolCall) {
  const tool = deps.agent.toolset.get(call.name);
  if (!tool) return { model, summary: null, result: JSON.stringify({ error: `there is no tool named ${call.name}` }) };
  let changes: readonly PlannedChange[];
  try {
    const outcome = await tool.run(model, call.arguments, toolContext);
    changes = outcome.changes;
    const next = edits.plan(changes);
    return {
      model: next,
      summary: outcome.summary,
      result: JSON.stringify({ summary: outcome.summary, ...(outcome.data !== undefined && { data: outcome.data }) }),
    };
  } catch (err) {
    if (err instanceof AppError && REFUSALS.has(err.code)) {
      return { model, summary: null, result: JSON.stringify({ error: err.message }) };
    }
    throw err;
  }
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
