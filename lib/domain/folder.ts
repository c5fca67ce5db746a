import type { Decider } from './decider';
import { assertNever, conflict, ignoreUnknown, type Rejection, reject } from './errors';

/**
 * Folders of a drive, each its own stream named by its path (`folder-<uuid v5 of drive and
 * path>`), so "create A/B/C as needed" is one idempotent decision per level and never contends
 * with anything else. A project's `folder_path` names the deepest one.
 */

// ---------------------------------------------------------------- events

export type FolderCreated = {
  readonly type: 'FolderCreated';
  readonly data: {
    readonly folder_id: string;
    readonly drive_id: string;
    /** "A/B/C": the names from the drive root, separated by `/`. */
    readonly path: string;
    readonly name: string;
    /** The folder it sits in; null at the drive root. */
    readonly parent_path: string | null;
    readonly created_by: string;
    readonly created_at: string;
  };
};

export type FolderEvent = FolderCreated;

// ---------------------------------------------------------------- state

export type FolderState = { readonly exists: false } | ({ readonly exists: true } & FolderCreated['data']);

export const initialFolderState = (): FolderState => ({ exists: false });

export function evolveFolder(state: FolderState, event: FolderEvent): FolderState {
  switch (event.type) {
    case 'FolderCreated':
      return { exists: true, ...event.data };
    default:
      return ignoreUnknown(event as never, state); // one member: TS does not narrow a lone object type
  }
}

// ---------------------------------------------------------------- commands

export type CreateFolder = {
  readonly type: 'CreateFolder';
  readonly folder: Omit<FolderCreated['data'], 'created_at' | 'name' | 'parent_path'>;
  readonly now: string;
};
export type FolderCommand = CreateFolder;

/** The folders `path` needs, outermost first: "A/B/C" → "A", "A/B", "A/B/C". */
export const folderPaths = (path: string): string[] => path.split('/').map((_, i, names) => names.slice(0, i + 1).join('/'));

// ---------------------------------------------------------------- decide

/** Creating a folder that exists is a no-op (that is what "as needed" means); another drive's is a conflict. */
export function decideFolder(command: FolderCommand, state: FolderState): FolderEvent[] | Rejection {
  switch (command.type) {
    case 'CreateFolder': {
      const { path, drive_id } = command.folder;
      if (state.exists) return state.drive_id === drive_id && state.path === path ? [] : reject(conflict('folder id collision', 'exists'));
      const names = path.split('/');
      const parent_path = names.length > 1 ? names.slice(0, -1).join('/') : null;
      return [{ type: 'FolderCreated', data: { ...command.folder, name: names[names.length - 1], parent_path, created_at: command.now } }];
    }
    default:
      return assertNever(command.type);
  }
}

export const folderDecider: Decider<FolderCommand, FolderEvent, FolderState> = {
  initialState: initialFolderState,
  evolve: evolveFolder,
  decide: decideFolder,
};
