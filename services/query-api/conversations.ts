import type Router from '@koa/router';
import { commandHandler } from '../../lib/app/command-handler';
import { conversationDecider, type Turn } from '../../lib/domain/conversation';
import { forbidden, notFound } from '../../lib/domain/errors';
import { isUuid, streams } from '../../lib/domain/ids';
import type { ApiContext } from '../../lib/http/middleware';
import type { EventStore } from '../../lib/ports/event-store';

/**
 * GET /v1/projects/{project_id}/conversations/{conversation_id} (an extension, DESIGN §8): an
 * agent conversation's turns. Folded from its stream on the event store, which is small (a turn
 * per prompt) and read rarely: the answer includes every turn recorded, with no projection lag.
 */
export function mountConversations(v1: Router, deps: { store: EventStore }): void {
  const conversations = commandHandler(deps.store, conversationDecider, streams.conversation);
  v1.get('/projects/:project_id/conversations/:conversation_id', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const { project_id: projectId, conversation_id: conversationId } = ctx.params;
    const missing = notFound(`conversation ${conversationId} does not exist in project ${projectId}`);
    if (!isUuid(projectId) || !isUuid(conversationId)) throw missing;
    const { state } = await conversations.load(conversationId.toLowerCase());
    if (!state.exists || state.started.project_id !== projectId.toLowerCase()) throw missing;
    if (state.started.drive_id !== auth.driveId) throw forbidden(`conversation ${conversationId} belongs to another drive`);
    ctx.body = {
      conversation_id: state.started.conversation_id,
      project_id: state.started.project_id,
      started_at: state.started.started_at,
      turns: state.turns.map(renderTurn),
    };
  });
}

const renderTurn = (turn: Turn) => ({
  job_id: turn.job_id,
  prompt: turn.prompt,
  model: turn.model,
  tool_calls: turn.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: parsed(c.arguments), result: parsed(c.result) })),
  response: turn.response,
  project_changed: turn.project_changed,
  revisions: turn.revisions,
  ai_credits_used: turn.ai_credits_used,
  recorded_at: turn.recorded_at,
});

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};
