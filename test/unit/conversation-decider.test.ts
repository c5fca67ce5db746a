import { conversationDecider, type ConversationEvent, type ConversationCommand } from '../../lib/domain/conversation';
import { specFor } from '../fixtures/given';

describe('conversation decider', () => {
  const given = specFor(conversationDecider);
  const T = '2026-01-01T00:00:00.000Z';
  const started: ConversationEvent = {
    type: 'ConversationStarted',
    data: { conversation_id: 'c1', project_id: 'p1', drive_id: 'd1', job_id: 'j1', started_at: T },
  };
  const turn = {
    job_id: 'j1',
    prompt: 'rename this composition to Intro',
    model: 'builtin',
    tool_calls: [{ id: 'call_1', name: 'rename_composition', arguments: '{"name":"Intro"}', result: '{"summary":"Renamed"}' }],
    response: 'Renamed Main to Intro.',
    project_changed: true,
    revisions: [{ composition_id: 'k1', before: 0, after: 1 }],
    ai_credits_used: 2,
  };
  const record: ConversationCommand = { type: 'RecordTurn', turn, now: T };

  it('starts once', () => {
    const start: ConversationCommand = {
      type: 'StartConversation',
      conversation: { conversation_id: 'c1', project_id: 'p1', drive_id: 'd1', job_id: 'j1' },
      now: T,
    };
    given().when(start).then([started]);
    given(started).when(start).thenRejects('conflict', { state: 'exists' });
  });

  it('records a turn with everything the next turn reads', () => {
    given(started)
      .when(record)
      .then([{ type: 'AgentTurnRecorded', data: { conversation_id: 'c1', ...turn, recorded_at: T } }]);
  });

  it('records a job turn once (a retried attempt adds nothing), and none on a conversation that does not exist', () => {
    given(started, { type: 'AgentTurnRecorded', data: { conversation_id: 'c1', ...turn, recorded_at: T } })
      .when(record)
      .then([]);
    given().when(record).thenRejects('not_found');
  });
});
