import { CREDITS, resolveModel, type Catalog, type ResolvedModel } from '../domain/agent/catalog';
import { resolveCompositionRef } from '../domain/composition-ref';
import { conversationDecider } from '../domain/conversation';
import { AppError, forbidden, invalidInput, notFound } from '../domain/errors';
import { compositionOrigin, firstFreeShortId, projectUrl, streams } from '../domain/ids';
import { jobDecider, type AgentRequest } from '../domain/job';
import { projectDecider, type TeamAccess } from '../domain/project';
import { agentDisabled, driveDecider } from '../domain/tenancy';
import type { Clock, Ids } from '../ports/clock';
import type { EventStore, StreamAppend } from '../ports/event-store';
import type { Balances } from './balances';
import { appendInOrder, commandHandler, decideNew } from './command-handler';
import { IdempotencyKeyTaken } from './idempotency';
import type { Principal } from './tenancy';

/**
 * Accepting an agent prompt (SPEC: POST /jobs/agent; issue 20 items 1, 2): every rule checked
 * before anything is written, then the project (when new), the conversation (when new) and the
 * queued job appended in one batch, led by the Idempotency-Key's record when there is one.
 */

/** The request body, as schemas/api/agent-request.json admits it. */
export type AgentJobRequest = {
  readonly prompt: string;
  readonly project_id?: string;
  readonly project_name?: string;
  readonly composition_id?: string;
  readonly model?: string;
  readonly team_access?: TeamAccess;
  readonly callback_url?: string;
  readonly conversation_id?: string;
};

export type AgentJobResponse = {
  readonly job_id: string;
  readonly drive_id: string;
  readonly drive_name: string | null;
  readonly project_id: string;
  readonly project_url: string;
  readonly conversation_id: string;
  readonly resolved_model: string;
};

export type AgentAcceptDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  webUrl: string;
  catalog: Catalog;
  /** Why a callback URL is refused from its text alone (an internal address), or null: as for imports. */
  urlRefusal: (url: string) => string | null;
  /** AI credits left (the drive's balance stream, not a read model: DESIGN §8). */
  balance: Pick<Balances, 'show'>;
};

export type AgentAccept = (
  who: Principal,
  body: AgentJobRequest,
  requestId: string,
  idempotency?: { record: (response: AgentJobResponse) => StreamAppend },
) => Promise<AgentJobResponse>;

/** Built once per app, with the handlers of the streams an accept reads. */
export function agentAccept(deps: AgentAcceptDeps): AgentAccept {
  const projects = commandHandler(deps.store, projectDecider, streams.project);
  const conversations = commandHandler(deps.store, conversationDecider, streams.conversation);
  const drives = commandHandler(deps.store, driveDecider, streams.drive);

  /** The existing project's composition (as a UUID) and its short id, after the 404/403/400 rules. */
  async function target(who: Principal, body: AgentJobRequest & { project_id: string }) {
    const { state } = await projects.load(body.project_id);
    if (!state.exists) throw notFound(`project ${body.project_id} does not exist`);
    if (state.project.drive_id !== who.driveId) throw forbidden(`project ${body.project_id} belongs to another drive`);
    if (body.composition_id === undefined) return { compositionId: null, shortId: undefined };
    const listing = { project_id: body.project_id, compositions: state.compositions };
    const compositionId = resolveCompositionRef(body.composition_id, listing, deps.webUrl);
    return { compositionId, shortId: state.compositions.find((c) => c.composition_id === compositionId)!.short_id };
  }

  async function checkConversation(projectId: string, conversationId: string) {
    const { state } = await conversations.load(conversationId);
    if (!state.exists) throw notFound(`conversation_id: conversation ${conversationId} does not exist`);
    if (state.started.project_id !== projectId) {
      throw invalidInput(`conversation_id: conversation ${conversationId} belongs to another project, not to ${projectId}`);
    }
  }

  async function checkDrive(who: Principal, model: ResolvedModel) {
    const { state } = await drives.load(who.driveId);
    if (agentDisabled(state)) throw forbidden('the drive admin has disabled agent usage on this drive');
    const required = CREDITS[model.cost].turn;
    // Credits running turns hold count as available: each gives back what it does not use, and the
    // turn's own reservation waits for them (services/processors/agent/work.ts).
    const credits = (await deps.balance.show(who.driveId)).ai_credits;
    const unspent = credits.allowance === null ? null : credits.allowance - credits.used;
    if (unspent !== null && unspent < required) {
      const shown = Math.max(0, Math.floor(unspent * 100) / 100);
      throw new AppError(
        'payment_required',
        `not enough AI credits to start: ${required} required (model ${model.runs.id}, cost ${model.cost}) and ${shown} available`,
      );
    }
  }

  return async (who, body, requestId, idempotency) => {
    const model = checkRequest(deps.catalog, body);
    const refused = body.callback_url === undefined ? null : deps.urlRefusal(body.callback_url);
    if (refused) throw invalidInput(`callback_url: refused: ${refused}`);
    // 404 and 400 about what the request names before 403 and 402 about the drive: the caller fixes those first.
    const existing = body.project_id ? await target(who, body as AgentJobRequest & { project_id: string }) : null;
    if (body.project_id && body.conversation_id) await checkConversation(body.project_id, body.conversation_id);
    await checkDrive(who, model);

    const now = deps.clock.now().toISOString();
    const newId = () => deps.ids.uuidv7();
    const jobId = deps.ids.uuidv7();
    const projectId = body.project_id ?? deps.ids.uuidv7();
    const conversationId = body.conversation_id ?? deps.ids.uuidv7();
    // A new project's URL names the placeholder the job gives it, as an import's does.
    const shortId = existing ? existing.shortId : firstFreeShortId(compositionOrigin(jobId, 'placeholder'), new Set());
    const url = projectUrl(deps.webUrl, projectId, shortId);
    const metadata = { partition_key: projectId, correlation_id: requestId, drive_id: who.driveId, user_id: who.userId };
    const request: AgentRequest = {
      prompt: body.prompt,
      model: model.runs.id,
      resolved_model: model.resolved_model,
      cost: model.cost,
      composition_id: existing?.compositionId ?? null,
      conversation_id: conversationId,
      new_project: !body.project_id,
    };

    const appends: StreamAppend[] = [];
    if (!body.project_id) {
      const project = {
        project_id: projectId,
        drive_id: who.driveId,
        name: body.project_name!,
        folder_path: null,
        team_access: body.team_access ?? 'none',
        created_by: who.userId,
        job_id: jobId,
      };
      appends.push(decideNew(streams.project(projectId), projectDecider, { type: 'CreateProject', project, now }, { newId, metadata }));
    }
    if (!body.conversation_id) {
      const conversation = { conversation_id: conversationId, project_id: projectId, drive_id: who.driveId, job_id: jobId };
      appends.push(
        decideNew(
          streams.conversation(conversationId),
          conversationDecider,
          { type: 'StartConversation', conversation, now },
          { newId, metadata },
        ),
      );
    }
    const job = {
      job_id: jobId,
      job_type: 'agent' as const,
      drive_id: who.driveId,
      project_id: projectId,
      project_url: url,
      created_by: who.userId,
      callback_url: body.callback_url ?? null,
      request,
    };
    appends.push(decideNew(streams.job(jobId), jobDecider, { type: 'QueueJob', job, now }, { newId, metadata }));
    const response: AgentJobResponse = {
      job_id: jobId,
      drive_id: who.driveId,
      drive_name: who.driveName,
      project_id: projectId,
      project_url: url,
      conversation_id: conversationId,
      resolved_model: model.resolved_model,
    };
    if (idempotency) appends.unshift(idempotency.record(response));
    const made = await appendInOrder(deps.store, appends);
    if (idempotency && made[0]?.ok === false) throw new IdempotencyKeyTaken();
    if (made.length < appends.length || made.some((r) => !r.ok)) {
      throw new AppError('unavailable', 'a new project, conversation or job id was taken by another request; send the request again', {
        retriable: true,
      });
    }
    return response;
  };
}

/** The rules the JSON Schema cannot say, each a 400 naming the field; resolves the model. */
function checkRequest(catalog: Catalog, body: AgentJobRequest): ResolvedModel {
  // Controls, zero-width and other format characters read as nothing, yet were charged a turn.
  if (!/[\p{L}\p{N}\p{S}\p{P}]/u.test(body.prompt)) {
    throw invalidInput('prompt must not be empty or only white space, control or invisible characters');
  }
  if (body.project_id !== undefined && body.project_name !== undefined) {
    throw invalidInput('project_id and project_name are mutually exclusive: give exactly one');
  }
  if (body.project_id === undefined && body.project_name === undefined) throw invalidInput('project_id or project_name is required');
  if (body.project_id === undefined) {
    if (body.composition_id !== undefined) throw invalidInput('composition_id requires project_id');
    if (body.conversation_id !== undefined) throw invalidInput('conversation_id requires project_id');
  } else if (body.team_access !== undefined) {
    throw invalidInput('team_access applies only when creating a project (with project_name)');
  }
  const model = resolveModel(catalog, body.model);
  if (!model) throw invalidInput(`model: "${body.model}" is not a model or alias of the catalog (GET /v1/agent/models lists them)`);
  return model;
}
