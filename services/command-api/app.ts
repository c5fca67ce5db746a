import { isJobId } from '../../lib/domain/ids';
import { notFound } from '../../lib/domain/errors';
import { createApiApp, type ApiAppDeps, type HttpApp } from '../../lib/http/app';
import { mountLaneRoutes, type LaneRoute } from '../../lib/http/express-lane';
import { idempotency } from '../../lib/http/idempotency';
import { infoLine, type ApiContext } from '../../lib/http/middleware';
import type { SchemaRegistry } from '../../lib/http/schemas';
import { acceptImport, importsOn, type ImportDeps, type ImportRequest, type ImportResponse } from '../../lib/app/import';
import { agentAccept, type AgentJobRequest, type AgentJobResponse } from '../../lib/app/agent';
import type { Balances } from '../../lib/app/balances';
import { publishAccept, type PublishJobRequest, type PublishJobResponse } from '../../lib/app/publish';
import type { Catalog } from '../../lib/domain/agent/catalog';
import { jobCommands } from './jobs';
import { partnerRoute } from './partner';
import { mountTextEdits } from './text-edits';
import { createUploadRoutes, type UploadRouteDeps } from './uploads';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { Admission, AdmissionRefusal } from '../../lib/app/admission';
import { admit } from '../../lib/http/admission';

export type CommandApiDeps = ApiAppDeps &
  ImportDeps & {
    schemas: SchemaRegistry;
    uploads?: UploadRouteDeps;
    /** Where transcripts are read for edits by text (the route is not mounted without it). */
    blobs?: BlobStore;
    /** The agent models a prompt may name (lib/adapters/agent/catalog-file.ts). */
    agentCatalog: Catalog;
    /** Media seconds for imports; AI credits for agent prompts. */
    balance: Pick<Balances, 'mediaSecondsLeft' | 'show'>;
    /** How many unfinished jobs a drive may have (lib/app/admission.ts); no limit without it. */
    admission?: Admission;
  };

/** The write side: every route turns a request into a command on the event store. */
export function createApp(deps: CommandApiDeps): HttpApp {
  const signed = deps.uploads ? [createUploadRoutes(deps.uploads)] : [];
  const imports = importsOn(deps);
  const jobs = jobCommands(deps);
  const accepted = infoLine(deps.logger, 'import accepted');
  const accept: LaneRoute = {
    method: 'POST',
    path: '/jobs/import/project_media',
    async handle({ auth, body, requestId, idempotency: key }) {
      deps.schemas.assertBody('import-request', body);
      const idempotency = key && {
        record: (answer: ImportResponse) => key.recordWith(201, answer),
        beforeOtherWrites: () => key.beforeOtherWrites(),
      };
      const response = await acceptImport(imports, auth, body as ImportRequest, requestId, { idempotency });
      // The line a child logger with the request id would write, from a template (a pino call costs ~4 % of the accept path).
      accepted({ request_id: requestId, job_id: response.job_id, project_id: response.project_id });
      return { status: 201, body: response };
    },
  };
  const acceptAgent = agentAccept({ ...deps, catalog: deps.agentCatalog });
  const agent: LaneRoute = {
    method: 'POST',
    path: '/jobs/agent',
    async handle({ auth, body, requestId, idempotency: key, log }) {
      deps.schemas.assertBody('agent-request', body);
      const record = key ? { record: (answer: AgentJobResponse) => key.recordWith(201, answer) } : undefined;
      const response = await acceptAgent(auth, body as AgentJobRequest, requestId, record);
      log.info({ job_id: response.job_id, project_id: response.project_id, model: response.resolved_model }, 'agent prompt accepted');
      return { status: 201, body: response };
    },
  };
  const acceptPublish = publishAccept(deps);
  const publish: LaneRoute = {
    method: 'POST',
    path: '/jobs/publish',
    async handle({ auth, body, requestId, idempotency: key, log }) {
      deps.schemas.assertBody('publish-request', body);
      const record = key ? { record: (answer: PublishJobResponse) => key.recordWith(201, answer) } : undefined;
      const response = await acceptPublish(auth, body as PublishJobRequest, requestId, record);
      log.info({ job_id: response.job_id, project_id: response.project_id }, 'publish accepted');
      return { status: 201, body: response };
    },
  };
  // An extension of the spec: deliver the job's webhook again now.
  const redeliver: LaneRoute = {
    method: 'POST',
    path: '/jobs/:job_id/deliveries',
    async handle({ auth, params, log, requestId }) {
      const jobId = params.job_id;
      if (!isJobId(jobId)) throw notFound(`job ${jobId} does not exist`);
      await jobs.requestRedelivery(auth, jobId, requestId);
      log.info({ job_id: jobId }, 'webhook redelivery requested');
      return { status: 202, body: { job_id: jobId, state: 'pending' } };
    },
  };
  // Every POST that creates something takes an Idempotency-Key (DESIGN §8): wrap it here. A
  // replayed key answers as the first time, so admission is decided inside, for new jobs only.
  const idempotent = idempotency(deps);
  const admitted = admittedBy(deps.admission);
  return createApiApp(deps, {
    lane: [
      idempotent(admitted(accept), { recordsWithItsAppends: true }),
      idempotent(admitted(agent), { recordsWithItsAppends: true }),
      idempotent(admitted(publish), { recordsWithItsAppends: true }),
    ],
    mount: (v1) => {
      v1.delete('/jobs/:job_id', async (ctx) => {
        const c = ctx as unknown as ApiContext;
        const jobId = ctx.params.job_id;
        if (!isJobId(jobId)) throw notFound(`job ${jobId} does not exist`);
        await jobs.cancel(c.state.auth, jobId, c.state.requestId);
        c.state.log.info({ job_id: jobId }, 'job cancelled');
        ctx.status = 204;
      });

      mountLaneRoutes(v1, [idempotent(redeliver), idempotent(partnerRoute(deps))]);
      if (deps.blobs) mountTextEdits(v1, { store: deps.store, blobs: deps.blobs, clock: deps.clock, ids: deps.ids });
    },
    outside: signed,
  });
}

/**
 * A route that creates a job, refused with 429 while the drive has as many unfinished jobs as it
 * may have (lib/http/admission.ts).
 */
const admittedBy =
  (admission: Admission | undefined) =>
  (route: LaneRoute): LaneRoute =>
    admission
      ? {
          ...route,
          async handle(request) {
            const waiting = admit(admission, request.auth.driveId, tooManyUnfinished);
            if (waiting) await waiting;
            return route.handle(request);
          },
        }
      : route;

const tooManyUnfinished = ({ unfinished }: AdmissionRefusal) =>
  `this drive had ${unfinished} unfinished jobs (queued or running) when last counted, about a second ago, ` +
  `the most it may have; send the request again after Retry-After seconds, once some have finished`;
