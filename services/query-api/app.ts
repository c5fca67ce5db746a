import type Koa from 'koa';
import { foldDocument } from '../../lib/app/projection';
import { forbidden, notFound } from '../../lib/domain/errors';
import { isJobId, streams } from '../../lib/domain/ids';
import type { EventStore } from '../../lib/ports/event-store';
import type { Condition, Doc, ReadStore } from '../../lib/ports/read-store';
import { createApiApp, type ApiAppDeps } from '../../lib/http/app';
import { afterCursorDesc, decodeCursor, encodeCursor } from '../../lib/http/cursor';
import type { ApiContext } from '../../lib/http/middleware';
import type { SchemaRegistry } from '../../lib/http/schemas';
import { evolveJobDoc, JOBS, renderJob } from './jobs-projection';

export type QueryApiDeps = ApiAppDeps & { read: ReadStore; store: EventStore; schemas: SchemaRegistry };

export const API_VERSION = '1.2';

/** The read side: answers from the read models. */
export function createApp(deps: QueryApiDeps): Koa {
  return createApiApp(deps, (v1) => {
    v1.get('/status', (ctx) => {
      const { auth } = (ctx as unknown as ApiContext).state;
      ctx.body = { drive_id: auth.driveId, drive_name: auth.driveName, api_version: API_VERSION };
    });

    v1.get('/jobs/:job_id', async (ctx) => {
      const { auth } = (ctx as unknown as ApiContext).state;
      const jobId = ctx.params.job_id;
      const doc = isJobId(jobId) ? await readJob(deps, jobId) : null;
      if (!doc) throw notFound(`job ${jobId} does not exist`);
      if (doc.drive_id !== auth.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
      ctx.body = renderJob(doc);
    });

    v1.get('/jobs', async (ctx) => {
      const { auth } = (ctx as unknown as ApiContext).state;
      const q: Record<string, unknown> = { ...ctx.query };
      deps.schemas.assertQuery('jobs-list-query', q);
      const base: Record<string, Condition> = { drive_id: auth.driveId };
      if (q.project_id) base.project_id = q.project_id as string;
      if (q.type) base.job_type = q.type as string;
      const range: Record<string, string> = {};
      if (q.created_after) range.$gt = new Date(q.created_after as string).toISOString();
      if (q.created_before) range.$lt = new Date(q.created_before as string).toISOString();
      if (Object.keys(range).length) base.created_at = range;
      const limit = q.limit as number;
      const filter = q.cursor ? afterCursorDesc(base, 'created_at', decodeCursor(q.cursor as string)) : base;
      const docs = await deps.read.find(JOBS, filter, {
        sort: [
          ['created_at', -1],
          ['_id', -1],
        ],
        limit: limit + 1,
      });
      const page = docs.slice(0, limit);
      const last = page[page.length - 1];
      ctx.body = {
        data: page.map(renderJob),
        pagination: docs.length > limit && last ? { next_cursor: encodeCursor(String(last.created_at), last._id) } : {},
      };
    });
  });
}

/**
 * The read model, or, when the projection has not caught up yet (a job accepted a moment ago),
 * the job's stream folded on the spot: a job is readable the moment its 201 was returned.
 */
async function readJob(deps: QueryApiDeps, jobId: string): Promise<Doc | null> {
  const doc = await deps.read.get(JOBS, jobId);
  if (doc) return doc;
  return foldDocument(await deps.store.readStream(streams.job(jobId)), evolveJobDoc);
}
