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

export function evolveProjectDoc(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as ProjectEvent;
  if (event.type === 'ProjectCreated') {
    const d = event.data;
    const created: Omit<ProjectDoc, '_rev'> = {
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
    return created as Doc;
  }
  if (!doc) return null;
  const project = doc as ProjectDoc;
  switch (event.type) {
    case 'MediaImported': {
      const m = event.data;
      const entry: ProjectMediaEntry = {
        ref: m.ref,
        asset_id: m.asset_id ?? null,
        type: m.media_type,
        duration: m.duration_seconds,
        has_video: m.has_video,
        transcript_key: null,
        language: m.language,
        tracks: m.tracks,
        updated_at: m.imported_at,
      };
      return { ...project, media: [...project.media.filter((x) => x.ref !== m.ref), entry], updated_at: m.imported_at };
    }
    case 'MediaTranscribed': {
      const t = event.data;
      const media = project.media.map((x) =>
        x.ref === t.ref ? { ...x, transcript_key: t.transcript_key, language: t.language, updated_at: t.transcribed_at } : x,
      );
      return { ...project, media, updated_at: t.transcribed_at };
    }
    case 'CompositionAdded': {
      const c = event.data;
      if (project.compositions.some((x) => x.id === c.composition_id)) return project;
      return {
        ...project,
        compositions: [...project.compositions, { id: c.composition_id, short_id: c.short_id }],
        updated_at: c.created_at,
      };
    }
    case 'ProjectViewed':
      return { ...project, last_viewed_at: event.data.viewed_at };
    default: {
      const legacy = stored.type === 'CompositionCreated' ? (stored.data as { composition_id: string; short_id: string }) : null;
      if (!legacy) return project;
      return { ...project, compositions: [...project.compositions, { id: legacy.composition_id, short_id: legacy.short_id }] };
    }
  }
}

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
