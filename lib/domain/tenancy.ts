import type { Decider } from './decider';
import { AppError, assertNever, ignoreUnknown, reject, type Rejection } from './errors';
import type { MediaSecondsCharged } from './job';

/** Drives (workspaces), their settings and balances, and the API tokens scoped to them. */

// ---------------------------------------------------------------- events

export type AccessLevel = 'public' | 'unlisted' | 'drive' | 'private';

export type DriveSettings = {
  readonly partner: boolean;
  readonly agent_disabled: boolean;
  readonly allowed_access_levels: readonly AccessLevel[];
  readonly default_access_level: AccessLevel;
  /** Hosts partner import URIs may come from (empty: none). */
  readonly host_allow_list: readonly string[];
  readonly ai_credits: number;
  /** `null`: unlimited. */
  readonly media_seconds: number | null;
};

export type DriveCreated = {
  readonly type: 'DriveCreated';
  readonly data: {
    readonly drive_id: string;
    readonly name: string;
    readonly webhook_secret: string;
    readonly settings: DriveSettings;
    readonly created_at: string;
  };
};
export type DriveUpdated = {
  readonly type: 'DriveUpdated';
  readonly data: {
    readonly drive_id: string;
    /** Settings that changed, plus `name`, plus a new `webhook_secret` when it was rotated. */
    readonly changes: Partial<DriveSettings> & { readonly name?: string; readonly webhook_secret?: string };
    readonly updated_at: string;
  };
};
/**
 * Legacy: charges were once appended to the drive stream (one per imported file), which made it
 * a hot spot. They are now recorded on the job's stream (see job.ts); old ones still count here.
 */
export type LegacyMediaSecondsCharged = MediaSecondsCharged;
export type DriveEvent = DriveCreated | DriveUpdated | LegacyMediaSecondsCharged;

export type TokenCreated = {
  readonly type: 'TokenCreated';
  readonly data: {
    readonly token_id: string;
    /** SHA-256 (hex) of the whole token; the token itself is never stored. */
    readonly secret_hash: string;
    readonly drive_id: string;
    readonly user_id: string;
    readonly name: string;
    readonly created_at: string;
    /**
     * The user's names as a publish's `published_by` shows them (issue 21). Null when the operator
     * gave none; absent on tokens created before names existed.
     */
    readonly first_name?: string | null;
    readonly last_name?: string | null;
  };
};
export type TokenRevoked = { readonly type: 'TokenRevoked'; readonly data: { readonly token_id: string; readonly revoked_at: string } };
export type TokenEvent = TokenCreated | TokenRevoked;

// ---------------------------------------------------------------- state

export type DriveState =
  | { readonly exists: false }
  | {
      readonly exists: true;
      readonly driveId: string;
      readonly name: string;
      readonly webhookSecret: string;
      readonly settings: DriveSettings;
    };

export const initialDriveState = (): DriveState => ({ exists: false });

export function evolveDrive(state: DriveState, event: DriveEvent): DriveState {
  switch (event.type) {
    case 'DriveCreated':
      return {
        exists: true,
        driveId: event.data.drive_id,
        name: event.data.name,
        webhookSecret: event.data.webhook_secret,
        settings: event.data.settings,
      };
    case 'DriveUpdated': {
      if (!state.exists) return state;
      const { name, webhook_secret, ...settings } = event.data.changes;
      return {
        ...state,
        name: name ?? state.name,
        webhookSecret: webhook_secret ?? state.webhookSecret,
        settings: { ...state.settings, ...settings },
      };
    }
    case 'MediaSecondsCharged': {
      if (!state.exists) return state;
      const left = state.settings.media_seconds === null ? null : state.settings.media_seconds - event.data.seconds;
      return { ...state, settings: { ...state.settings, media_seconds: left } };
    }
    default:
      return ignoreUnknown(event, state);
  }
}

/**
 * The drive's media-seconds allowance (what the admin granted, less legacy charges); `null` when
 * unlimited. What is left is this less what the drive's balance stream has settled and reserved
 * (lib/domain/balance.ts).
 */
export const mediaSecondsAllowance = (state: DriveState): number | null => (state.exists ? state.settings.media_seconds : 0);

/** Whether the drive's admin disabled agent usage: prompts are refused when posted, and when their turn comes. */
export const agentDisabled = (state: DriveState): boolean => state.exists && state.settings.agent_disabled;

export type TokenState =
  { readonly exists: false } | { readonly exists: true; readonly token: TokenCreated['data']; readonly revoked: boolean };

export const initialTokenState = (): TokenState => ({ exists: false });

export function evolveToken(state: TokenState, event: TokenEvent): TokenState {
  switch (event.type) {
    case 'TokenCreated':
      return { exists: true, token: event.data, revoked: false };
    case 'TokenRevoked':
      return state.exists ? { ...state, revoked: true } : state;
    default:
      return ignoreUnknown(event, state);
  }
}

// ---------------------------------------------------------------- commands

export const DEFAULT_SETTINGS: DriveSettings = {
  partner: false,
  agent_disabled: false,
  allowed_access_levels: ['public', 'unlisted', 'drive', 'private'],
  default_access_level: 'unlisted',
  host_allow_list: [],
  ai_credits: 0,
  media_seconds: null,
};

export type CreateDrive = { readonly type: 'CreateDrive'; readonly drive: Omit<DriveCreated['data'], 'created_at'>; readonly now: string };
export type UpdateDrive = { readonly type: 'UpdateDrive'; readonly changes: DriveUpdated['data']['changes']; readonly now: string };
export function decideDrive(command: CreateDrive | UpdateDrive, state: DriveState): DriveEvent[] | Rejection {
  switch (command.type) {
    case 'CreateDrive':
      if (state.exists) return reject(new AppError('conflict', 'drive already exists', { extra: { state: 'exists' } }));
      return [{ type: 'DriveCreated', data: { ...command.drive, created_at: command.now } }];
    case 'UpdateDrive': {
      if (!state.exists) return reject(new AppError('not_found', 'drive does not exist'));
      const next = { ...state.settings, ...command.changes };
      if (!next.allowed_access_levels.includes(next.default_access_level)) {
        return reject(new AppError('invalid_input', `default access level "${next.default_access_level}" is not among the allowed levels`));
      }
      if (Object.keys(command.changes).length === 0) return [];
      return [{ type: 'DriveUpdated', data: { drive_id: state.driveId, changes: command.changes, updated_at: command.now } }];
    }
    default:
      return assertNever(command);
  }
}

export type CreateToken = { readonly type: 'CreateToken'; readonly token: Omit<TokenCreated['data'], 'created_at'>; readonly now: string };
export type RevokeToken = { readonly type: 'RevokeToken'; readonly now: string };

export function decideToken(command: CreateToken | RevokeToken, state: TokenState): TokenEvent[] | Rejection {
  switch (command.type) {
    case 'CreateToken':
      if (state.exists) return reject(new AppError('conflict', 'token id already exists', { extra: { state: 'exists' } }));
      return [{ type: 'TokenCreated', data: { ...command.token, created_at: command.now } }];
    case 'RevokeToken':
      if (!state.exists) return reject(new AppError('not_found', 'token does not exist'));
      return state.revoked ? [] : [{ type: 'TokenRevoked', data: { token_id: state.token.token_id, revoked_at: command.now } }];
    default:
      return assertNever(command);
  }
}

export const driveDecider: Decider<CreateDrive | UpdateDrive, DriveEvent, DriveState> = {
  initialState: initialDriveState,
  evolve: evolveDrive,
  decide: decideDrive,
};

export const tokenDecider: Decider<CreateToken | RevokeToken, TokenEvent, TokenState> = {
  initialState: initialTokenState,
  evolve: evolveToken,
  decide: decideToken,
};
