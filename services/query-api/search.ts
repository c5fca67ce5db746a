import type Router from '@koa/router';
import type { ApiContext } from '../../lib/http/middleware';
import type { SchemaRegistry } from '../../lib/http/schemas';
import type { Doc, ReadQueries } from '../../lib/ports/read-store';
import type { SearchField, SearchHit, SearchIndex, SearchSort, SearchType } from '../../lib/ports/search-index';
import { COMPOSITIONS, isDeletedComposition } from '../../lib/read-models/compositions';
import { FOLDERS } from '../../lib/read-models/folders';

/** GET /search: the drive's projects, folders, media, compositions and transcripts, through the SearchIndex port. */

export type SearchDeps = { read: ReadQueries; search: SearchIndex; schemas: SchemaRegistry };

export function mountSearch(v1: Router, deps: SearchDeps): void {
  v1.get('/search', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const q: Record<string, unknown> = { ...ctx.query };
    deps.schemas.assertQuery('search-query', q);
    const hits = await deps.search.search({
      drive_id: auth.driveId,
      text: q.query as string,
      types: q.type as SearchType[] | undefined,
      match: q.match as SearchField[] | undefined,
      ...(q.updated_after !== undefined && { updated_after: new Date(q.updated_after as string).toISOString() }),
      ...(q.updated_before !== undefined && { updated_before: new Date(q.updated_before as string).toISOString() }),
      sort: q.sort as SearchSort,
      limit: q.limit as number,
    });
    ctx.body = { results: await render(deps.read, hits) };
  });
}

/** Hits in the shapes of DESIGN §3; a transcript hit names the composition that plays the words. */
async function render(read: ReadQueries, hits: readonly SearchHit[]): Promise<Record<string, unknown>[]> {
  const folderIds = hits.filter((h) => h.entry.kind === 'project_folder').map((h) => h.entry.id.slice('folder:'.length));
  const folders = new Map((folderIds.length ? await read.getMany(FOLDERS, folderIds) : []).map((d) => [d._id, d]));
  const compositionsOf = new Map<string, Promise<Doc[]>>();
  const compositionPlaying = async (projectId: string, ref: string): Promise<string | undefined> => {
    if (!compositionsOf.has(projectId))
      compositionsOf.set(projectId, read.find(COMPOSITIONS, { project_id: projectId }, { sort: [['created_at', 1]] }));
    const docs = await compositionsOf.get(projectId)!;
    const playing = (c: Doc) => !isDeletedComposition(c) && (c.clips as { media: string }[]).some((clip) => clip.media === ref);
    return docs.find(playing)?._id;
  };
  const results: Record<string, unknown>[] = [];
  for (const { entry, matched, snippet } of hits) {
    switch (entry.kind) {
      case 'project':
        results.push({ type: 'project', project_id: entry.project_id, name: entry.name, updated_at: entry.updated_at });
        break;
      case 'project_folder': {
        const folder = folders.get(entry.id.slice('folder:'.length));
        results.push({ type: 'project_folder', name: entry.name, ...(folder && { path: folder.path }), updated_at: entry.updated_at });
        break;
      }
      case 'composition':
        results.push({
          type: 'composition',
          composition_id: entry.composition_id,
          name: entry.name,
          project_id: entry.project_id,
          updated_at: entry.updated_at,
          duration: entry.duration,
        });
        break;
      case 'media': {
        const composition = matched === 'content' ? await compositionPlaying(entry.project_id!, entry.name) : undefined;
        results.push({
          type: entry.media_type,
          asset_id: entry.asset_id,
          name: entry.name,
          location: 'project',
          project_id: entry.project_id,
          updated_at: entry.updated_at,
          ...(entry.duration !== null && entry.duration !== undefined && { duration: entry.duration }),
          ...(matched === 'content' && { snippet, ...(composition && { composition_id: composition }) }),
        });
        break;
      }
    }
  }
  return results;
}
