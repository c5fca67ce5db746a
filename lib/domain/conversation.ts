import type { Decider } from './decider';
import { AppError, assertNever, ignoreUnknown, reject, type Rejection } from './errors';

/**
 * An agent conversation (issue 20 item 8), its own stream `conversation-<id>`: started when the
 * first prompt is accepted (so a follow-up naming it is valid at once, even before that turn
 * ran), then one `AgentTurnRecorded` per finished turn with everything the next turn's model
 * reads and an undo needs: the prompt, the model, the tool calls with their arguments and
 * results, the response, and each changed composition's stream revisions before and after.
 */

// ---------------------------------------------------------------- events

export type ConversationStarted = {
  readonly type: 'ConversationStarted';
  readonly data: {
    readonly conversation_id: string;
    readonly project_id: string;
    readonly drive_id: string;
    /** The job whose prompt started it. */
    readonly job_id: string;
    readonly started_at: string;
  };
};

/** One tool call of a turn: its arguments and result as JSON text (events stay schema-stable whatever the tool). */
export type RecordedToolCall = {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
  readonly result: string;
};
/** A composition the turn changed: its stream revision before the turn (null: it did not exist) and after. */
export type RevisionChange = { readonly composition_id: string; readonly before: number | null; readonly after: number };

export type AgentTurnRecorded = {
  readonly type: 'AgentTurnRecorded';
  readonly data: {
    readonly conversation_id: string;
    readonly job_id: string;
    readonly prompt: string;
    /** The canonical model that ran. */
    readonly model: string;
    readonly tool_calls: readonly RecordedToolCall[];
    readonly response: string;
    readonly project_changed: boolean;
    readonly revisions: readonly RevisionChange[];
    readonly ai_credits_used: number;
    readonly recorded_at: string;
  };
};

export type ConversationEvent = ConversationStarted | AgentTurnRecorded;

// ---------------------------------------------------------------- state

export type Turn = Omit<AgentTurnRecorded['data'], 'conversation_id'>;

export type ConversationState =
  { readonly exists: false } | { readonly exists: true; readonly started: ConversationStarted['data']; readonly turns: readonly Turn[] };

export const initialConversationState = (): ConversationState => ({ exists: false });

export function evolveConversation(state: ConversationState, event: ConversationEvent): ConversationState {
  switch (event.type) {
    case 'ConversationStarted':
      return state.exists ? state : { exists: true, started: event.data, turns: [] };
    case 'AgentTurnRecorded': {
      if (!state.exists) return state;
      const { conversation_id: _, ...turn } = event.data;
      return { ...state, turns: [...state.turns, turn] };
    }
    default:
      return ignoreUnknown(event, state);
  }
}

// ---------------------------------------------------------------- commands

export type StartConversation = {
  readonly type: 'StartConversation';
  readonly conversation: Omit<ConversationStarted['data'], 'started_at'>;
  readonly now: string;
};
export type RecordTurn = { readonly type: 'RecordTurn'; readonly turn: Omit<Turn, 'recorded_at'>; readonly now: string };
export type ConversationCommand = StartConversation | RecordTurn;

export function decideConversation(command: ConversationCommand, state: ConversationState): ConversationEvent[] | Rejection {
  switch (command.type) {
    case 'StartConversation':
      if (state.exists) return reject(new AppError('conflict', 'conversation already exists', { extra: { state: 'exists' } }));
      return [{ type: 'ConversationStarted', data: { ...command.conversation, started_at: command.now } }];
    case 'RecordTurn': {
      if (!state.exists) return reject(new AppError('not_found', 'conversation does not exist'));
      // One turn per job: a retried attempt that recorded already records nothing more.
      if (state.turns.some((t) => t.job_id === command.turn.job_id)) return [];
      const data = { conversation_id: state.started.conversation_id, ...command.turn, recorded_at: command.now };
      return [{ type: 'AgentTurnRecorded', data }];
    }
    default:
      return assertNever(command);
  }
}

export const conversationDecider: Decider<ConversationCommand, ConversationEvent, ConversationState> = {
  initialState: initialConversationState,
  evolve: evolveConversation,
  decide: decideConversation,
};
