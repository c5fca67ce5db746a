import { foldDocument, foldParts, type DocEvolve, type DocParts } from '../app/projection';
import type { ReadModel } from '../app/read-models';
import { streamCategory } from '../domain/ids';
import type { SequenceTrack } from '../domain/import';
import type { ProjectEvent, ProjectPartner } from '../domain/project';
import type { StoredEvent } from '../ports/event-store';
import type { Doc, ReadQueries } from '../ports/read-store';

/**
 * The `projects` read model: one document per project, what the list, the detail, search and
 * the project page read, and beside it, in `project_files`, one document per file of a project
 * (its parts, see `DocParts`). A project's files are not in its document: the projector read and
 * wrote the whole document for every batch that touched the project, 2.2 MB at 10,000 files, so
 * every drive's reads-after-writes waited on one drive's large project. A file's document is keyed
 * by project and reference; a reference is a user's name (dots, `$`, `constructor`), never a field
 * name in a store.
 */

export const PROJECTS = 'projects';
export const PROJECT_FILES = 'project_files';

export type ProjectMediaEntry = {
  readonly ref: string;
  readonly asset_id: string | null;
  readonly type: string;
  /** Seconds; null for images. */
  readonly duration: number | null;
  readonly has_video: boolean;
  readonly transcript_key: string | null;
  readonly language: string | null;
  readonly tracks: readonly SequenceTrack[] | null;
  /** When the media last changed (imported, transcribed). */
  readonly updated_at: string;
};

/** A file's document in `project_files`. */
export type ProjectFileDoc = Doc &
  ProjectMediaEntry & {
    readonly project_id: string;
    /** The revision of the project stream's event that last imported it: a project's files are listed in that order. */
    readonly import_rev: number;
  };

export type ProjectDoc = Doc & {
  readonly id: string;
  readonly name: string;
  /** Lower-cased name: what `sort=name` orders by, so case does not split the alphabet. */
  readonly name_key: string;
  readonly drive_id: string;
  readonly folder_path: string | null;
  readonly created_by: string;
  readonly created_at: string;
  readonly updated_at: string;
  /** The last time any member of the drive opened it; null when nobody has. */
  readonly last_viewed_at: string | null;
  /** Where a project imported through a partner's link came from (export pages' meta tags); null otherwise. */
  readonly partner: ProjectPartner | null;
  /** In the order they were added (the placeholder first); names and clips are in `compositions`. */
  readonly compositions: readonly { readonly id: string; readonly short_id: string }[];
  /**
   * The revision of the last event that changed one of its files (an import, a transcription);
   * null before the first. The files read with a document are the same for as long as this is.
   */
  readonly files_rev: number | null;
};

const PROJECT_EVENTS = [
  'ProjectCreated',
  'MediaImported',
  'MediaTranscribed',
  'CompositionAdded',
  'CompositionCreated', // the whole composition on the project stream, as written before compositions had streams
  'ProjectViewed',
  'ProjectEdited',
] as const satisfies readonly (ProjectEvent['type'] | 'CompositionCreated')[];

const mediaEntry = (m: Extract<ProjectEvent, { type: 'MediaImported' }>['data']): ProjectMediaEntry => ({
  ref: m.ref,
  asset_id: m.asset_id ?? null,
  type: m.media_type,
  duration: m.duration_seconds,
  has_video: m.has_video,
  transcript_key: null,
  language: m.language,
  tracks: m.tracks,
  updated_at: m.imported_at,
});

function createdDoc(d: Extract<ProjectEvent, { type: 'ProjectCreated' }>['data']): Omit<ProjectDoc, '_rev'> {
  return {
    _id: d.project_id,
    id: d.project_id,
    name: d.name,
    name_key: d.name.toLowerCase(),
    drive_id: d.drive_id,
    folder_path: d.folder_path,
    created_by: d.created_by,
    created_at: d.created_at,
    updated_at: d.created_at,
    last_viewed_at: null,
    partner: d.partner ? { partner_drive_id: d.partner.partner_drive_id, source_id: d.partner.source_id ?? null } : null,
    compositions: [],
    files_rev: null,
  };
}

/**
 * The project's document after `events` of its stream, each applied one stamping `_rev`, in one
 * pass: its compositions are copied once, on their first change. Its files are its parts
 * (`projectFileParts`).
 */
export function foldProjectDoc(doc: Doc | null, events: readonly StoredEvent[]): Doc | null {
  let project = doc as ProjectDoc | null;
  let compositions: ProjectDoc['compositions'][number][] | null = null;
  for (const stored of events) {
    const event = { type: stored.type, data: stored.data } as ProjectEvent;
    if (event.type === 'ProjectCreated') {
      project = createdDoc(event.data) as ProjectDoc;
      compositions = null;
    } else if (!project) {
      continue;
    } else if (event.type === 'MediaImported') {
      project = { ...project, updated_at: event.data.imported_at, files_rev: stored.revision };
    } else if (event.type === 'MediaTranscribed') {
      project = { ...project, updated_at: event.data.transcribed_at, files_rev: stored.revision };
    } else if (event.type === 'CompositionAdded') {
      const c = event.data;
      if (!(compositions ?? project.compositions).some((x) => x.id === c.composition_id)) {
        (compositions ??= [...project.compositions]).push({ id: c.composition_id, short_id: c.short_id });
        project = { ...project, updated_at: c.created_at };
      }
    } else if (event.type === 'ProjectEdited') {
      project = { ...project, updated_at: event.data.edited_at };
    } else if (event.type === 'ProjectViewed') {
      project = { ...project, last_viewed_at: event.data.viewed_at };
    } else if (stored.type === 'CompositionCreated') {
      // The whole composition on the project stream, as written before compositions had streams.
      const legacy = stored.data as { composition_id: string; short_id: string };
      (compositions ??= [...project.compositions]).push({ id: legacy.composition_id, short_id: legacy.short_id });
    }
    project = { ...project, _rev: stored.revision };
  }
  return project && compositions ? { ...project, compositions } : project;
}

/** The document after one event (the projector's `evolve`); many at once through `many`. */
export const evolveProjectDoc: DocEvolve = Object.assign((doc: Doc | null, stored: StoredEvent) => foldProjectDoc(doc, [stored]), {
  many: foldProjectDoc,
});

const projectIdOf = (e: StoredEvent) => e.streamId.slice('project-'.length);

/** A file's document id: the project's id, then its reference (a project id has no `/`). */
export const projectFileId = (projectId: string, ref: string) => `${projectId}/${ref}`;

/** A project's files as documents of their own: one per reference, changed by its imports and transcriptions. */
export const projectFileParts: DocParts = {
  collection: PROJECT_FILES,
  key: (e) =>
    (e.type === 'MediaImported' || e.type === 'MediaTranscribed') && streamCategory(e.streamId) === 'project'
      ? projectFileId(projectIdOf(e), String((e.data as { ref: unknown }).ref))
      : null,
  evolve: (doc, stored) => {
    const event = { type: stored.type, data: stored.data } as ProjectEvent;
    if (event.type === 'MediaImported') {
      const file = { _id: projectFileId(projectIdOf(stored), event.data.ref), _rev: stored.revision, ...mediaEntry(event.data) };
      return { ...file, project_id: projectIdOf(stored), import_rev: stored.revision } satisfies ProjectFileDoc;
    }
    if (event.type === 'MediaTranscribed' && doc) {
      const t = event.data;
      return { ...doc, transcript_key: t.transcript_key, language: t.language, updated_at: t.transcribed_at };
    }
    return null;
  },
};

/** A project with its files, in the order they were last imported: what its readers need. */
export type ProjectWithFiles = ProjectDoc & { readonly media: readonly ProjectMediaEntry[] };

const entryOf = (doc: Doc): ProjectMediaEntry => {
  const { ref, asset_id, type, duration, has_video, transcript_key, language, tracks, updated_at } = doc as ProjectFileDoc;
  return { ref, asset_id, type, duration, has_video, transcript_key, language, tracks, updated_at };
};

/** A project's files in the order they were last imported (a file imported again goes last). */
export async function projectFiles(read: ReadQueries, projectId: string): Promise<ProjectMediaEntry[]> {
  return (await read.find(PROJECT_FILES, { project_id: projectId }, { sort: [['import_rev', 1]] })).map(entryOf);
}

/** Those of `refs` that are files of the project, in no particular order. */
export async function projectFilesOf(read: ReadQueries, projectId: string, refs: Iterable<string>): Promise<ProjectMediaEntry[]> {
  const ids = [...new Set(refs)].map((ref) => projectFileId(projectId, ref));
  return ids.length === 0 ? [] : (await read.getMany(PROJECT_FILES, ids)).map(entryOf);
}

/**
 * The project with its files, from the read model; null when the model does not have it. The
 * document is read before the files, which are written before it, so the files are never older
 * than the document.
 */
export async function readProject(
  read: ReadQueries,
  projectId: string,
  files: ProjectFilesReader = (r, project) => projectFiles(r, project.id),
): Promise<ProjectWithFiles | null> {
  const project = (await read.get(PROJECTS, projectId)) as ProjectDoc | null;
  return project && { ...project, media: await files(read, project) };
}

/**
 * Reads the files of a project whose document was just read: any files at least as recent as the
 * document (the files of its `files_rev` or later), in import order.
 */
export type ProjectFilesReader = (read: ReadQueries, project: ProjectDoc) => Promise<readonly ProjectMediaEntry[]>;

/** The project with its files folded from its stream (to answer before the projection has it). */
export function foldProjectWithFiles(events: readonly StoredEvent[]): ProjectWithFiles | null {
  const project = foldDocument(events, evolveProjectDoc) as ProjectDoc | null;
  if (!project) return null;
  const files = [...foldParts(projectFileParts, events).values()];
  const media = files.sort((a, b) => Number(a.import_rev) - Number(b.import_rev)).map(entryOf);
  return { ...project, media };
}

export const projectsModel: ReadModel = {
  name: PROJECTS,
  // 2: the files moved to `project_files`; 3: `files_rev`.
  version: 3,
  handles: new Set(PROJECT_EVENTS),
  docId: (e) => (streamCategory(e.streamId) === 'project' ? e.streamId.slice('project-'.length) : null),
  evolve: evolveProjectDoc,
  parts: { ...projectFileParts, indexes: [['project_id', 'import_rev']] },
  // Each list sort is (field, _id) within a drive.
  indexes: [
    ['drive_id', 'created_at'],
    ['drive_id', 'updated_at'],
    ['drive_id', 'name_key'],
    ['drive_id', 'last_viewed_at'],
    ['drive_id', 'folder_path'],
  ],
};
