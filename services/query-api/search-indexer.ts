import { loadTranscript } from '../../lib/app/transcripts';
import { streamCategory } from '../../lib/domain/ids';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { StoredEvent } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import type { SearchEntry, SearchIndex, SearchMediaType } from '../../lib/ports/search-index';
import { COMPOSITIONS, isDeletedComposition } from '../../lib/read-models/compositions';
import { FOLDERS } from '../../lib/read-models/folders';
import { projectFilesOf, PROJECTS, type ProjectDoc, type ProjectMediaEntry } from '../../lib/read-models/projects';

/**
 * Keeps the SearchIndex in step with the read models: after the projector has applied an event,
 * the entries it concerns are written again from the documents (so a redelivery, or events out of
 * order, end in the same entries). A transcript's words are read from its blob once, when the
 * media is transcribed. A deleted composition's entry is removed (its document is a tombstone).
 */

export type IndexerDeps = { read: ReadStore; search: SearchIndex; blobs: BlobStore };

const MEDIA_TYPES = new Set<SearchMediaType>(['audio', 'video', 'image', 'sequence', 'other']);

export const projectEntryId = (projectId: string) => `project:${projectId}`;
export const mediaEntryId = (projectId: string, ref: string) => `media:${projectId}:${ref}`;
export const compositionEntryId = (compositionId: string) => `composition:${compositionId}`;
export const folderEntryId = (folderId: string) => `folder:${folderId}`;

export async function indexEvent(deps: IndexerDeps, event: StoredEvent): Promise<void> {
  const entries = await entriesFor(deps, event);
  if (entries.length > 0) await deps.search.upsert(entries);
  const removed = await removedFor(deps, event);
  if (removed.length > 0) await deps.search.remove(removed);
}

/**
 * Events applied together (a page of `$all` in replay, a batch of the projector): the entries
 * they touch, each written once, in one upsert. The same entries as `indexEvent` one after the
 * other, since entries are written from the documents as they are now.
 */
export async function indexPage(deps: IndexerDeps, events: readonly StoredEvent[]): Promise<void> {
  const latest = new Map<string, StoredEvent>();
  // The last event of each type for each thing (a media file, a composition, else the stream):
  // an entry depends on the event's type and thing and on the documents, so one is enough, and
  // a transcript is read once.
  for (const e of events) latest.set(`${e.streamId}\n${e.type}\n${String(e.data.ref ?? e.data.composition_id ?? '')}`, e);
  const entries = new Map<string, SearchEntry>();
  const removed: string[] = [];
  for (const e of latest.values()) {
    for (const entry of await entriesFor(deps, e)) entries.set(entry.id, entry);
    removed.push(...(await removedFor(deps, e)));
  }
  if (entries.size > 0) await deps.search.upsert([...entries.values()]);
  if (removed.length > 0) await deps.search.remove(removed);
}

/** The entries an event makes go: a deleted composition's. */
async function removedFor(deps: IndexerDeps, event: StoredEvent): Promise<string[]> {
  if (streamCategory(event.streamId) !== 'composition') return [];
  const id = event.streamId.slice('composition-'.length);
  const composition = await deps.read.get(COMPOSITIONS, id);
  return composition && isDeletedComposition(composition) ? [compositionEntryId(id)] : [];
}

async function entriesFor(deps: IndexerDeps, event: StoredEvent): Promise<SearchEntry[]> {
  switch (streamCategory(event.streamId)) {
    case 'project':
      return projectEntries(deps, event);
    case 'composition':
      return compositionEntries(deps, event.streamId.slice('composition-'.length));
    case 'folder': {
      const folder = await deps.read.get(FOLDERS, event.streamId.slice('folder-'.length));
      if (!folder) return [];
      return [
        {
          id: folderEntryId(folder._id),
          drive_id: String(folder.drive_id),
          kind: 'project_folder',
          name: String(folder.name),
          updated_at: String(folder.updated_at),
        },
      ];
    }
    default:
      return [];
  }
}

async function projectEntries(deps: IndexerDeps, event: StoredEvent): Promise<SearchEntry[]> {
  const project = (await deps.read.get(PROJECTS, event.streamId.slice('project-'.length))) as ProjectDoc | null;
  if (!project) return [];
  const entries: SearchEntry[] = [
    {
      id: projectEntryId(project.id),
      drive_id: project.drive_id,
      kind: 'project',
      name: project.name,
      project_id: project.id,
      updated_at: project.updated_at,
    },
  ];
  const ref = typeof event.data.ref === 'string' ? event.data.ref : null;
  const [media] = ref === null ? [] : await projectFilesOf(deps.read, project.id, [ref]);
  if (media && (event.type === 'MediaImported' || event.type === 'MediaTranscribed')) {
    // The transcript's words go in with the media entry; a redelivered MediaImported must not drop them.
    const content = media.transcript_key ? await transcriptText(deps.blobs, media.transcript_key) : undefined;
    entries.push(mediaEntry(project, media, content));
  }
  if (event.type === 'CompositionAdded' || event.type === 'CompositionCreated') {
    entries.push(...(await compositionEntries(deps, String(event.data.composition_id))));
  }
  return entries;
}

function mediaEntry(project: ProjectDoc, m: ProjectMediaEntry, content: string | undefined): SearchEntry {
  return {
    id: mediaEntryId(project.id, m.ref),
    drive_id: project.drive_id,
    kind: 'media',
    name: m.ref,
    ...(content !== undefined && { content }),
    media_type: MEDIA_TYPES.has(m.type as SearchMediaType) ? (m.type as SearchMediaType) : 'other',
    project_id: project.id,
    ...(m.asset_id !== null && { asset_id: m.asset_id }),
    duration: m.duration,
    updated_at: m.updated_at,
  };
}

async function compositionEntries(deps: IndexerDeps, compositionId: string): Promise<SearchEntry[]> {
  const composition = await deps.read.get(COMPOSITIONS, compositionId);
  if (!composition || isDeletedComposition(composition)) return [];
  const project = (await deps.read.get(PROJECTS, String(composition.project_id))) as ProjectDoc | null;
  if (!project) return [];
  return [
    {
      id: compositionEntryId(compositionId),
      drive_id: project.drive_id,
      kind: 'composition',
      name: String(composition.name),
      project_id: project.id,
      composition_id: compositionId,
      duration: Number(composition.duration),
      updated_at: String(composition.updated_at),
    },
  ];
}

async function transcriptText(blobs: BlobStore, key: string): Promise<string | undefined> {
  try {
    return (await loadTranscript(blobs, key)).map((w) => w.text).join(' ');
  } catch {
    return undefined; // a transcript blob that is gone: the media stays findable by name
  }
}
