import type { Decider } from './decider';
import { AppError, assertNever, conflict, ignoreUnknown, invalidInput, reject, type Rejection } from './errors';

/**
 * A partner's one-time import link ("edit in", SPEC: Import link), on its own stream
 * `importlink-<nonce>`. Issued by a partner drive for files at public or pre-signed URIs; used
 * once by whoever signs in and imports, which reserves the ids of the project and job it makes.
 * Expiry is not an event: a link is expired when it is read after `expires_at` unused.
 */

// ---------------------------------------------------------------- events

/** A file as the partner described it in the import schema. */
export type ImportLinkFile = {
  readonly uri: string;
  readonly name: string | null;
  readonly start_offset: { readonly seconds: number } | null;
};

export type ImportLinkIssued = {
  readonly type: 'ImportLinkIssued';
  readonly data: {
    readonly nonce: string;
    /** The partner's drive: the drive of the token that asked for the link. */
    readonly drive_id: string;
    /** As the partner sent it (lower case; equal to `drive_id` when issued): the project keeps it for the round trip. */
    readonly partner_drive_id: string;
    readonly source_id: string | null;
    readonly files: readonly ImportLinkFile[];
    readonly expires_at: string;
    readonly issued_at: string;
  };
};
export type ImportLinkUsed = {
  readonly type: 'ImportLinkUsed';
  readonly data: {
    readonly nonce: string;
    readonly used_by_drive: string;
    readonly used_by_user: string;
    /** Reserved here, created next: the link is spent before anything is imported, so it is spent once. */
    readonly project_id: string;
    readonly job_id: string;
    readonly used_at: string;
  };
};

export type ImportLinkEvent = ImportLinkIssued | ImportLinkUsed;

// ---------------------------------------------------------------- state

export type ImportLinkState =
  | { readonly exists: false }
  | { readonly exists: true; readonly link: ImportLinkIssued['data']; readonly used: ImportLinkUsed['data'] | null };

export type ImportLinkStatus = 'unknown' | 'issued' | 'used' | 'expired';

/** How long a link stays usable (SPEC Limits: 3 hours). */
export const IMPORT_LINK_TTL_MS = 3 * 60 * 60 * 1000;

export const initialImportLinkState = (): ImportLinkState => ({ exists: false });

export function evolveImportLink(state: ImportLinkState, event: ImportLinkEvent): ImportLinkState {
  switch (event.type) {
    case 'ImportLinkIssued':
      return { exists: true, link: event.data, used: null };
    case 'ImportLinkUsed':
      return state.exists && state.used === null ? { ...state, used: event.data } : state;
    default:
      return ignoreUnknown(event, state);
  }
}

/** The link's state at `now`: a used link stays used after its expiry time. */
export function importLinkStatus(state: ImportLinkState, now: string): ImportLinkStatus {
  if (!state.exists) return 'unknown';
  if (state.used) return 'used';
  return Date.parse(now) >= Date.parse(state.link.expires_at) ? 'expired' : 'issued';
}

// ---------------------------------------------------------------- commands

export type IssueImportLink = {
  readonly type: 'IssueImportLink';
  readonly link: Omit<ImportLinkIssued['data'], 'expires_at' | 'issued_at'>;
  /** `IMPORT_LINK_TTL_MS` unless configured otherwise (tests). */
  readonly validForMs: number;
  readonly now: string;
};
export type UseImportLink = {
  readonly type: 'UseImportLink';
  readonly by: { readonly drive_id: string; readonly user_id: string };
  readonly project_id: string;
  readonly job_id: string;
  readonly now: string;
};

export type ImportLinkCommand = IssueImportLink | UseImportLink;

// ---------------------------------------------------------------- decide

export function decideImportLink(command: ImportLinkCommand, state: ImportLinkState): ImportLinkEvent[] | Rejection {
  switch (command.type) {
    case 'IssueImportLink': {
      if (state.exists) return reject(conflict('an import link with this nonce already exists', 'issued'));
      if (command.link.files.length === 0) return reject(invalidInput('an import link needs at least one file'));
      const expires_at = new Date(Date.parse(command.now) + command.validForMs).toISOString();
      return [{ type: 'ImportLinkIssued', data: { ...command.link, expires_at, issued_at: command.now } }];
    }
    case 'UseImportLink': {
      const status = importLinkStatus(state, command.now);
      switch (status) {
        case 'unknown':
          return reject(new AppError('not_found', 'there is no such import link'));
        case 'used':
          return reject(conflict('this import link was already used', 'used'));
        case 'expired':
          return reject(conflict('this import link has expired', 'expired'));
        case 'issued': {
          const { nonce } = (state as Extract<ImportLinkState, { exists: true }>).link;
          const { by, project_id, job_id, now } = command;
          return [
            {
              type: 'ImportLinkUsed',
              data: { nonce, used_by_drive: by.drive_id, used_by_user: by.user_id, project_id, job_id, used_at: now },
            },
          ];
        }
        default:
          return assertNever(status);
      }
    }
    default:
      return assertNever(command);
  }
}

export const importLinkDecider: Decider<ImportLinkCommand, ImportLinkEvent, ImportLinkState> = {
  initialState: initialImportLinkState,
  evolve: evolveImportLink,
  decide: decideImportLink,
};
