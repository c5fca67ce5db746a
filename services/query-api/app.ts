import { API_VERSION } from '../../lib/http/openapi';
import { createBalances } from '../../lib/app/balances';
import { catalogBody, type Catalog } from '../../lib/domain/agent/catalog';
import { mountConversations } from './conversations';
import { positionValue } from '../../lib/app/consistency';
import { foldDocument } from '../../lib/app/projection';
import { forbidden, notFound } from '../../lib/domain/errors';
import { isJobId, streams } from '../../lib/domain/ids';
import type { WebSessions } from '../../lib/app/web-sessions';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';
import type { Condition, Doc, ReadQueries } from '../../lib/ports/read-store';
import { createApiApp, type ApiAppDeps, type HttpApp } from '../../lib/http/app';
import type { LaneRoute } from '../../lib/http/express-lane';
import type { CacheStats, JobEventStreamStats } from '../../lib/observability/metrics';
import { findPage } from '../../lib/http/cursor';
import type { ApiContext } from '../../lib/http/middleware';
import type { SchemaRegistry } from '../../lib/http/schemas';
import { endedAt, evolveJobDoc, JOBS, renderJob } from '../../lib/read-models/jobs';
import type { SnapshotStore } from '../../lib/app/snapshots';
import type { Admission } from '../../lib/app/admission';
import { keptJobAnswers } from './kept-answers';
import { keptProjectFiles } from './kept-project-files';
import { mountProjects, timeRange } from './projects';
import { mountSearch } from './search';
import { mountCompositionTranscript } from './composition-transcript';
import { mountDeliveries } from './deliveries';
import { mountTimelineExport } from './timeline-export';
import { mountExportTranscript } from './export-transcript';
import { mountJobEvents, type JobEventsOptions, type JobEventStreams } from './job-events';
import type { Watermark } from '../../lib/app/consistency';
import { createDownloadRoutes } from './downloads';
import { mountPublishedProjects, type PublishedProjectsSettings } from './published-projects';
import { createWebRoutes } from './web/routes';
import { createApiDocsRoutes } from './api-docs';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { SearchIndex } from '../../lib/ports/search-index';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';

export type QueryApiDeps = ApiAppDeps & {
  /** The agent models (GET /agent/models), as the command API resolves them. */
  agentCatalog: Catalog;
  /** What the API answers from (`ReadSide.queries`). */
  read: ReadQueries;
  store: EventStore;
  schemas: SchemaRegistry;
  clock: Clock;
  ids: Ids;
  search: SearchIndex;
  /** Where transcripts are read for the project page, and downloads streamed from. */
  blobs: BlobStore;
  /** SIGNING_SECRET: download URLs signed with it are served (services/query-api/downloads.ts). */
  downloadSecret?: string;
  webUrl: string;
  /**
   * GET /published_projects/{slug}: its per-user limiter and how its download URLs are signed.
   * Mounted with `downloadSecret`; without both, the route does not exist (404).
   */
  published?: PublishedProjectsSettings;
  /** The web pages' sign-ins (`createWebSessions` over the writable read store). */
  sessions: WebSessions;
  /** Per client address: `POST /login`s and `/import`s in its window. */
  formLimiter: RateLimiterAbstract;
  /** Proxies in front whose `X-Forwarded-For` entry names the client (TRUSTED_PROXY_HOPS). */
  trustedProxyHops?: number;
  /** Why a URL is refused from its text alone (an internal address): the partner import page checks a link's URIs again. */
  urlRefusal: (url: string) => string | null;
  /** Where the app's in-memory caches report how they do (`Metrics.watchCache`). */
  watchCache?: (name: string, stats: () => CacheStats) => void;
  /** The read models' watermark: its moves wake the job event streams (without it, a shared timer does). */
  watermark?: Watermark;
  /** Bounds of the job event streams (JOB_EVENTS_* settings; defaults in job-events.ts). */
  jobEvents?: Partial<JobEventsOptions>;
  /** Where the balance streams' folds are kept (the partner import page reads a drive's balance). */
  snapshots?: SnapshotStore;
  /** Admission control for the partner import page (the command API has its own). */
  admission?: Admission;
  /** Where the open job event streams are reported (`Metrics.watchJobEvents`). */
  watchJobEvents?: (stats: () => JobEventStreamStats) => void;
};

/** The read side: answers from the read models. `jobEvents`: its open event streams (ended on shutdown). */
export function createApp(deps: QueryApiDeps): HttpApp & { jobEvents: JobEventStreams } {
  const files = keptProjectFiles();
  deps.watchCache?.('project_files', files.stats);
  const projectFiles = files.read;
  const web = createWebRoutes({
    authenticate: deps.authenticate,
    sessions: deps.sessions,
    formLimiter: deps.formLimiter,
    trustedProxyHops: deps.trustedProxyHops,
    read: deps.read,
    projectFiles,
    blobs: deps.blobs,
    webUrl: deps.webUrl,
    logger: deps.logger,
    consistency: deps.consistency?.hooks,
    imports: {
      store: deps.store,
      clock: deps.clock,
      ids: deps.ids,
      webUrl: deps.webUrl,
      urlRefusal: deps.urlRefusal,
      balance: createBalances({ store: deps.store, clock: deps.clock, ids: deps.ids, snapshots: deps.snapshots }),
      admission: deps.admission,
    },
  });
  const docs = createApiDocsRoutes({ version: API_VERSION });
  const answers = keptJobAnswers();
  deps.watchCache?.('job_answers', answers.stats);
  const job: LaneRoute = {
    method: 'GET',
    path: '/jobs/:job_id',
    async handle({ auth, params }) {
      const jobId = params.job_id;
      const answer = isJobId(jobId)
        ? await answers.of(
            jobId,
            () => deps.read.getJson(JOBS, jobId),
            () => foldJob(deps, jobId),
          )
        : null;
      if (!answer) throw notFound(`job ${jobId} does not exist`);
      if (answer.driveId !== auth.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
      // A final state only once what the job changed is readable (lib/app/consistency.ts).
      const effects = answer.ended === null ? undefined : deps.consistency?.hooks.until(answer.ended);
      if (effects) await effects;
      return { status: 200, json: answer.json };
    },
  };
  let jobEvents: JobEventStreams | undefined;
  const app = createApiApp(deps, {
    lane: [job],
    mount: (v1) => {
      v1.get('/status', (ctx) => {
        const { auth } = (ctx as unknown as ApiContext).state;
        ctx.body = { drive_id: auth.driveId, drive_name: auth.driveName, api_version: API_VERSION };
      });

      v1.get('/jobs', async (ctx) => {
        const { auth } = (ctx as unknown as ApiContext).state;
        const q: Record<string, unknown> = { ...ctx.query };
        deps.schemas.assertQuery('jobs-list-query', q);
        const base: Record<string, Condition> = { drive_id: auth.driveId };
        if (q.project_id) base.project_id = q.project_id as string;
        if (q.type) base.job_type = q.type as string;
        const range = timeRange(q.created_after, q.created_before);
        if (range) base.created_at = range;
        const page = await findPage(deps.read, JOBS, base, {
          sort: 'created_at',
          direction: 'desc',
          limit: q.limit as number,
          cursor: q.cursor as string | undefined,
        });
        const effects = untilEnded(deps, page.docs);
        if (effects) await effects;
        ctx.body = { data: page.docs.map(renderJob), pagination: page.next_cursor ? { next_cursor: page.next_cursor } : {} };
      });

      // The catalog is the configuration's, fixed at start: one body for every request.
      const models = catalogBody(deps.agentCatalog);
      v1.get('/agent/models', (ctx) => {
        ctx.body = models;
      });

      mountProjects(v1, { ...deps, projectFiles });
      mountConversations(v1, deps);
      mountSearch(v1, deps);
      mountCompositionTranscript(v1, { ...deps, projectFiles });
      mountDeliveries(v1, deps);
      mountTimelineExport(v1, { ...deps, projectFiles });
      mountExportTranscript(v1, { ...deps, projectFiles });
      if (deps.published && deps.downloadSecret) {
        mountPublishedProjects(v1, { ...deps, published: deps.published, downloadSecret: deps.downloadSecret });
      }
      jobEvents = mountJobEvents(v1, {
        read: deps.read,
        schemas: deps.schemas,
        store: deps.store,
        logger: deps.logger,
        consistency: deps.consistency?.hooks,
        watermark: deps.watermark,
        options: deps.jobEvents,
      });
    },
    // Signed download URLs are their own credential (outside the token guard), as upload URLs are.
    outside: deps.downloadSecret
      ? [docs, web, createDownloadRoutes({ secret: deps.downloadSecret, blobs: deps.blobs, clock: deps.clock })]
      : [docs, web],
  });
  if (!jobEvents) throw new Error('the job event routes were not mounted');
  const streams = jobEvents;
  deps.watchJobEvents?.(() => ({ open: streams.open(), watchedJobs: streams.watched().jobs }));
  return Object.assign(app, { jobEvents });
}

/** Waits until what the page's final jobs changed is projected (nothing to wait for: undefined). */
function untilEnded(deps: QueryApiDeps, docs: readonly Doc[]) {
  let last: bigint | null = null;
  for (const doc of docs) {
    const ended = endedAt(doc);
    const position = ended === null ? null : positionValue(ended);
    if (position !== null && (last === null || position > last)) last = position;
  }
  return last === null ? undefined : deps.consistency?.hooks.until(last);
}

/** When the projection has not caught up yet (a job accepted a moment ago): the job's stream folded on the spot. */
async function foldJob(deps: QueryApiDeps, jobId: string): Promise<Doc | null> {
  return foldDocument(await deps.store.readStream(streams.job(jobId)), evolveJobDoc);
}
