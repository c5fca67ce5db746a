import { v5 as uuidv5 } from 'uuid';
import { folderPaths, type folderDecider } from '../domain/folder';
import type { EventMetadata } from '../ports/event-store';
import type { HandlerOf } from './command-handler';

/** The folder streams' handler (`commandHandler(store, folderDecider, streams.folder)`). */
export type Folders = HandlerOf<typeof folderDecider>;

/** A folder's id: the same drive and path always name the same folder (and stream). */
export const folderIdOf = (driveId: string, path: string): string => uuidv5(path, driveId);

/**
 * Creates the folders `path` needs ("A/B/C": A, A/B and A/B/C), each only if missing. Each is
 * tried as a new stream first; one that exists costs a refused append and a read.
 */
export async function ensureFolders(
  folders: Folders,
  who: { driveId: string; userId: string },
  path: string,
  options: { now: string; newId: () => string; metadata: EventMetadata },
): Promise<void> {
  for (const folderPath of folderPaths(path)) {
    const folderId = folderIdOf(who.driveId, folderPath);
    await folders.handle(
      folderId,
      {
        type: 'CreateFolder',
        folder: { folder_id: folderId, drive_id: who.driveId, path: folderPath, created_by: who.userId },
        now: options.now,
      },
      { newId: options.newId, metadata: { ...options.metadata, partition_key: folderId }, expectNew: true },
    );
  }
}
