import type Router from '@koa/router';
import type { Logger } from 'pino';
import { commandHandler } from '../../lib/app/command-handler';
import type { Principal } from '../../lib/app/tenancy';
import { streams } from '../../lib/domain/ids';
import { VIEW_INTERVAL_MS, projectDecider } from '../../lib/domain/project';
import { findPage, type Direction } from '../../lib/http/cursor';
import type { ApiContext } from '../../lib/http/middleware';
import type { SchemaRegistry } from '../../lib/http/schemas';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';
import type { Condition, ReadQueries } from '../../lib/ports/read-store';
import { PROJECTS, type ProjectDoc } from '../../lib/read-models/projects';
import { publicationsOfProject } from '../../lib/app/published';
import type { ProjectFilesReader } from '../../lib/read-models/projects';
import { loadProjectView, renderProjectDetail } from './project-view';

/** GET /projects and GET /projects/{project_id}, from the `projects` and `compositions` read models. */

export type ProjectsDeps = {
  read: ReadQueries;
  store: EventStore;
  schemas: SchemaRegistry;
  clock: Clock;
  ids: Ids;
  logger: Logger;
  /** WEB_URL: where publications' share pages are. */
  webUrl: string;
  /** How a project's files are read (`ProjectViewDeps`). */
  projectFiles?: ProjectFilesReader;
};

/** The sort a query names → the field it orders by (names fold case). */
const SORT_FIELDS = new Map([
  ['name', 'name_key'],
  ['created_at', 'created_at'],
  ['updated_at', 'updated_at'],
  ['last_viewed_at', 'last_viewed_at'],
]);

export function mountProjects(v1: Router, deps: ProjectsDeps): void {
  const views = viewRecorder(deps);

  v1.get('/projects', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const q: Record<string, unknown> = { ...ctx.query };
    deps.schemas.assertQuery('projects-list-query', q);
    const base: Record<string, Condition> = { drive_id: auth.driveId };
    if (q.name) base.name = { $contains: q.name as string };
    if (q.folder_path !== undefined) base.folder_path = q.folder_path as string;
    if (q.created_by) base.created_by = q.created_by === 'me' ? auth.userId : (q.created_by as string).toLowerCase();
    const created = timeRange(q.created_after, q.created_before);
    if (created) base.created_at = created;
    const updated = timeRange(q.updated_after, q.updated_before);
    if (updated) base.updated_at = updated;
    const sort = q.sort as string;
    const page = await findPage(deps.read, PROJECTS, base, {
      sort,
      field: SORT_FIELDS.get(sort)!,
      direction: q.direction as Direction,
      limit: q.limit as number,
      cursor: q.cursor as string | undefined,
    });
    ctx.body = {
      data: page.docs.map((d) => renderSummary(d as ProjectDoc)),
      pagination: page.next_cursor ? { next_cursor: page.next_cursor } : {},
    };
  });

  v1.get('/projects/:project_id', async (ctx) => {
    const { auth, log } = (ctx as unknown as ApiContext).state;
    const view = await loadProjectView(deps, auth, ctx.params.project_id);
    ctx.body = renderProjectDetail(view, await publicationsOfProject(deps.read, view.project.id), deps.webUrl);
    views.record(auth, view.project.id, log);
  });
}

function renderSummary(p: ProjectDoc): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    created_at: p.created_at,
    updated_at: p.updated_at,
    ...(p.last_viewed_at !== null && { last_viewed_at: p.last_viewed_at }),
    ...(p.folder_path !== null && { folder_path: p.folder_path }),
  };
}

/** `{$gt, $lt}` of two optional bounds (validated date-times), normalised to ISO; undefined when neither is given. */
export function timeRange(after: unknown, before: unknown): Condition | undefined {
  if (after === undefined && before === undefined) return undefined;
  return {
    ...(after !== undefined && { $gt: new Date(after as string).toISOString() }),
    ...(before !== undefined && { $lt: new Date(before as string).toISOString() }),
  };
}

/**
 * Views become `ProjectViewed` events, at most one a minute per project and user (the decider
 * says so; the memo here spares the store a read for every repeated open). Recorded after the
 * answer and best effort: reading a project never waits on, or fails for, a write.
 */
function viewRecorder(deps: ProjectsDeps) {
  const recent = new Map<string, number>();
  const projects = commandHandler(deps.store, projectDecider, streams.project);
  return {
    record(who: Principal, projectId: string, log: Logger) {
      const key = `${projectId}\n${who.userId}`;
      const now = deps.clock.now();
      const last = recent.get(key);
      if (last !== undefined && now.getTime() - last < VIEW_INTERVAL_MS) return;
      recent.set(key, now.getTime());
      if (recent.size > 10_000) recent.delete(recent.keys().next().value!); // oldest first: a bounded memo
      void projects
        .handle(
          projectId,
          { type: 'RecordView', userId: who.userId, now: now.toISOString() },
          { newId: deps.ids.uuidv7, metadata: { partition_key: projectId, drive_id: who.driveId, user_id: who.userId } },
        )
        .catch((err: unknown) => log.warn({ err, project_id: projectId }, 'project view not recorded'));
    },
  };
}
