import type { ReadModel } from '../app/read-models';
import type { FolderEvent } from '../domain/folder';
import { streamCategory } from '../domain/ids';
import type { StoredEvent } from '../ports/event-store';
import type { Doc } from '../ports/read-store';

/** The `folders` read model: each folder of a drive with its path and the folder it sits in. */

export const FOLDERS = 'folders';

export function evolveFolderDoc(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as FolderEvent;
  switch (event.type) {
    case 'FolderCreated':
      return { _id: event.data.folder_id, _rev: stored.revision, ...event.data, updated_at: event.data.created_at };
    default:
      return doc;
  }
}

export const foldersModel: ReadModel = {
  name: FOLDERS,
  version: 1,
  handles: new Set(['FolderCreated'] satisfies FolderEvent['type'][]),
  docId: (e) => (streamCategory(e.streamId) === 'folder' ? e.streamId.slice('folder-'.length) : null),
  evolve: evolveFolderDoc,
  indexes: [['drive_id', 'path']],
};
