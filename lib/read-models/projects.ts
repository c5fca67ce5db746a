import type { DocEvolve } from '../app/projection';
import type { ReadModel } from '../app/read-models';
import { streamCategory } from '../domain/ids';
import type { SequenceTrack } from '../domain/import';
import type { ProjectEvent, ProjectPartner } from '../domain/project';
import type { StoredEvent } from '../ports/event-store';
import type { Doc } from '../ports/read-store';

/**
 * The `projects` read model: one document per project, what the list, the detail, search and
 * the project page read. Media are an array of entries, not an object keyed by reference: a
 * reference is a user's name (dots, `$`, `constructor`), never a field name in a store.
 */

export const PROJECTS = 'projects';

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
  readonly media: readonly ProjectMediaEntry[];
  /** Where a project imported through a partner's link came from (export pages' meta tags); null otherwise. */
  readonly partner: ProjectPartner | null;
  /** In the order they were added (the placeholder first); names and clips are in `compositions`. */
  readonly compositions: readonly { readonly id: string; readonly short_id: string }[];
};

const PROJECT_EVENTS = [
  'ProjectCreated',
  'MediaImported',
  'MediaTranscribed',
  'CompositionAdded',
  'CompositionCreated', // the whole composition on the project stream, as written before compositions had streams
  'ProjectViewed',
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
    media: [],
    compositions: [],
  };
}

/**
 * The project's document after `events` of its stream, each applied one stamping `_rev`, in one
 * pass: its files and compositions are copied once, on their first change (the files into a map
 * by reference, whose order is the list's: a file imported again goes last), and written back as
 * lists at the end. Evolving event by event copied the list of files per event, so folding a
 * project's whole stream (a rebuild, a gap healed, the detail answered before the projection)
 * was quadratic in its files.
 */
export function foldProjectDoc(doc: Doc | null, events: readonly StoredEvent[]): Doc | null {
  let project = doc as ProjectDoc | null;
  let files: Map<string, ProjectMediaEntry> | null = null;
  let compositions: ProjectDoc['compositions'][number][] | null = null;
  for (const stored of events) {
    const event = { type: stored.type, data: stored.data } as ProjectEvent;
    if (event.type === 'ProjectCreated') {
      project = createdDoc(event.data) as ProjectDoc;
      files = compositions = null;
    } else if (!project) {
      continue;
    } else if (event.type === 'MediaImported') {
      files ??= new Map(project.media.map((m) => [m.ref, m]));
      files.delete(event.data.ref);
      files.set(event.data.ref, mediaEntry(event.data));
      project = { ...project, updated_at: event.data.imported_at };
    } else if (event.type === 'MediaTranscribed') {
      const t = event.data;
      files ??= new Map(project.media.map((m) => [m.ref, m]));
      const file = files.get(t.ref);
      if (file) files.set(t.ref, { ...file, transcript_key: t.transcript_key, language: t.language, updated_at: t.transcribed_at });
      project = { ...project, updated_at: t.transcribed_at };
    } else if (event.type === 'CompositionAdded') {
      const c = event.data;
      if (!(compositions ?? project.compositions).some((x) => x.id === c.composition_id)) {
        (compositions ??= [...project.compositions]).push({ id: c.composition_id, short_id: c.short_id });
        project = { ...project, updated_at: c.created_at };
      }
    } else if (event.type === 'ProjectViewed') {
      project = { ...project, last_viewed_at: event.data.viewed_at };
    } else if (stored.type === 'CompositionCreated') {
      // The whole composition on the project stream, as written before compositions had streams.
      const legacy = stored.data as { composition_id: string; short_id: string };
      (compositions ??= [...project.compositions]).push({ id: legacy.composition_id, short_id: legacy.short_id });
    }
    project = { ...project, _rev: stored.revision };
  }
  if (!project || (!files && !compositions)) return project;
  return { ...project, media: files ? [...files.values()] : project.media, compositions: compositions ?? project.compositions };
}

/** The document after one event (the projector's `evolve`); many at once through `many`. */
export const evolveProjectDoc: DocEvolve = Object.assign((doc: Doc | null, stored: StoredEvent) => foldProjectDoc(doc, [stored]), {
  many: foldProjectDoc,
});

export const projectsModel: ReadModel = {
  name: PROJECTS,
  version: 1,
  handles: new Set(PROJECT_EVENTS),
  docId: (e) => (streamCategory(e.streamId) === 'project' ? e.streamId.slice('project-'.length) : null),
  evolve: evolveProjectDoc,
  // Each list sort is (field, _id) within a drive.
  indexes: [
    ['drive_id', 'created_at'],
    ['drive_id', 'updated_at'],
    ['drive_id', 'name_key'],
    ['drive_id', 'last_viewed_at'],
    ['drive_id', 'folder_path'],
  ],
};
