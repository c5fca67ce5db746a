import type { PublicationRead } from '../../lib/app/published';
import type { Principal } from '../../lib/app/tenancy';
import { shareUrl } from '../../lib/domain/publication';
import { compositionMediaType, type Clip, type Marker } from '../../lib/domain/edl';
import { forbidden, invalidInput, notFound } from '../../lib/domain/errors';
import { isUuid, streams } from '../../lib/domain/ids';
import type { EventStore } from '../../lib/ports/event-store';
import type { Doc, ReadQueries } from '../../lib/ports/read-store';
import { JOBS, renderJob } from '../../lib/read-models/jobs';
import { COMPOSITIONS, isDeletedComposition } from '../../lib/read-models/compositions';
import {
  foldProjectWithFiles,
  readProject,
  type ProjectDoc,
  type ProjectFilesReader,
  type ProjectMediaEntry,
  type ProjectWithFiles,
} from '../../lib/read-models/projects';

/** A project as the detail endpoint and the project page read it: the project document joined with its files and compositions. */

/** With the event store, a project the projection has not reached yet (created a moment ago) is folded from its stream. */
/** `projectFiles`: how a project's files are read (kept ones, `keptProjectFiles`); from the read model each time without it. */
export type ProjectViewDeps = { read: ReadQueries; store?: EventStore; projectFiles?: ProjectFilesReader };

export type CompositionView = {
  readonly id: string;
  readonly short_id: string;
  readonly name: string;
  readonly duration: number;
  readonly media_type: 'video' | 'audio';
  readonly clips: readonly Clip[];
  readonly markers: readonly Marker[];
  /** Its stream's revision: what an edit by text is planned on. */
  readonly revision: number;
};

export type ProjectView = { readonly project: ProjectWithFiles; readonly compositions: readonly CompositionView[] };

/** The project of the principal's drive: 400 for a malformed id, 404 when it does not exist, 403 for another drive's. */
export async function loadProjectView(deps: ProjectViewDeps, who: Principal, projectId: string): Promise<ProjectView> {
  if (!isUuid(projectId)) throw invalidInput(`project_id ${JSON.stringify(projectId.slice(0, 80))} is not a UUID`);
  const id = projectId.toLowerCase();
  const project =
    (await readProject(deps.read, id, deps.projectFiles)) ??
    (deps.store ? foldProjectWithFiles(await deps.store.readStream(streams.project(id))) : null);
  if (!project) throw notFound(`project ${projectId} does not exist`);
  if (project.drive_id !== who.driveId) throw forbidden(`project ${projectId} belongs to another drive`);
  const docs = new Map(
    (
      await deps.read.getMany(
        COMPOSITIONS,
        project.compositions.map((c) => c.id),
      )
    ).map((d) => [d._id, d]),
  );
  const media = new Map(project.media.map((m) => [m.ref, m]));
  const hasVideo = (ref: string, depth = 0): boolean => {
    const m = media.get(ref);
    return !!m && depth < 5 && (m.has_video || (m.tracks ?? []).some((t) => hasVideo(t.media, depth + 1)));
  };
  const compositions = project.compositions.flatMap((entry): CompositionView[] => {
    const doc = docs.get(entry.id);
    if (!doc) return []; // listed, its stream not written yet (a crash between the two appends, finished on retry)
    if (isDeletedComposition(doc)) return []; // the project stream still lists it, so its short id stays taken
    const clips = doc.clips as Clip[];
    return [
      {
        id: entry.id,
        short_id: entry.short_id,
        name: String(doc.name),
        duration: Number(doc.duration),
        media_type: compositionMediaType(clips, (ref) => hasVideo(ref)),
        clips,
        markers: (doc.markers as Marker[] | undefined) ?? [],
        revision: Number(doc.revision),
      },
    ];
  });
  return { project, compositions };
}

/** `GET /projects/{project_id}` as the spec shapes it, with the project's publications newest first. */
export function renderProjectDetail(view: ProjectView, publications: readonly PublicationRead[], webUrl: string): Record<string, unknown> {
  const { project } = view;
  return {
    id: project.id,
    name: project.name,
    drive_id: project.drive_id,
    created_at: project.created_at,
    updated_at: project.updated_at,
    // Own properties from entries: a reference such as "__proto__" stays a key.
    media_files: Object.fromEntries(project.media.map((m) => [m.ref, mediaFileOf(m)])),
    compositions: view.compositions.map(({ id, name, duration, media_type }) => ({ id, name, duration, media_type })),
    // "Successfully published share pages" (SPEC): a page is listed once it has been rendered, so
    // `published_at` is always a time; a republish in progress stays listed with its last render.
    publishes: publications.filter((p) => p.doc.published_at !== null).map((p) => publishEntry(p, view, webUrl)),
    ...(project.folder_path !== null && { folder_path: project.folder_path }),
  };
}

/**
 * A `publishes` item (issue 21): the SPEC-era fields, then `slug` and `state` (additive). Its name
 * is the render's title; before the first render, the composition's name as it is now (the
 * project's when the composition is gone).
 */
function publishEntry({ doc, state }: PublicationRead, view: ProjectView, webUrl: string): Record<string, unknown> {
  const composition = view.compositions.find((c) => c.id === doc.composition_id);
  return {
    share_url: shareUrl(webUrl, doc.slug),
    composition_id: doc.composition_id,
    access_level: doc.started.access_level,
    media_type: doc.started.media_type,
    published_at: doc.published_at,
    updated_at: doc.updated_at,
    name: doc.render?.title ?? composition?.name ?? view.project.name,
    slug: doc.slug,
    state,
  };
}

const mediaFileOf = (m: ProjectMediaEntry) => (m.duration === null ? { type: m.type } : { type: m.type, duration: m.duration });

/** The project's most recent jobs, newest first, as `GET /jobs/{id}` renders them. */
export async function recentJobs(read: ReadQueries, project: ProjectDoc, limit = 10): Promise<Record<string, unknown>[]> {
  const docs: Doc[] = await read.find(
    JOBS,
    { drive_id: project.drive_id, project_id: project.id },
    {
      sort: [
        ['created_at', -1],
        ['_id', -1],
      ],
      limit,
    },
  );
  return docs.map(renderJob);
}
