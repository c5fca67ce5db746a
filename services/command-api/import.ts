import { handleCommand, loadState } from '../../lib/app/command-handler';
import { jobDecider, projectDecider } from '../../lib/app/deciders';
import { deliveryDecider } from '../../lib/domain/delivery';
import type { BalanceReader } from '../../lib/app/balance';
import type { Principal } from '../../lib/app/tenancy';
import { AppError, forbidden, invalidInput, notFound } from '../../lib/domain/errors';
import { importJobId, projectUrl, streams } from '../../lib/domain/ids';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';
import { ensureFolders } from '../../lib/app/folders';
import { planImport, type ImportRequest } from '../../lib/app/import-plan';
import { isSequenceItem, uploadsOf, type UploadItem } from '../../lib/domain/import';

/** POST /jobs/import/project_media: check the request against the project, then queue the job. */

export type { ImportRequest };

export type ImportDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  webUrl: string;
  /** Why a media or callback URL is refused from its text alone (internal address), or null. */
  urlRefusal: (url: string) => string | null;
  balance: BalanceReader;
  /** How long an upload URL stays valid (3 hours unless configured). */
  uploadTtlMs: number;
  /** The largest media file an upload item may declare. */
  mediaMaxBytes: number;
  /** The signed URL a caller PUTs an upload item's bytes to. */
  uploadUrl: (upload: { jobId: string; driveId: string; projectId: string; ref: string } & UploadItem['upload']) => string;
};

export async function acceptImport(deps: ImportDeps, who: Principal, body: ImportRequest, requestId: string) {
  if (body.project_id && body.project_name) throw invalidInput('project_name and project_id are mutually exclusive');
  if (!body.project_id && !body.project_name) throw invalidInput('project_name or project_id is required');
  if (body.project_id && (body.folder_name || body.team_access)) {
    throw invalidInput(`${body.folder_name ? 'folder_name' : 'team_access'} applies only when creating a project (with project_name)`);
  }
  const addMedia = body.add_media ?? {};
  if (Object.keys(addMedia).length === 0 && (body.add_compositions ?? []).length === 0) {
    throw invalidInput('add_media is required: give at least one media item');
  }

  const existing = body.project_id ? await loadExistingProject(deps, who, body.project_id) : new Set<string>();
  const now = deps.clock.now().toISOString();
  // Whole seconds: the signed URL carries its expiry in Unix seconds, and the job must agree with it.
  const expiresAt = new Date(Math.floor((Date.parse(now) + deps.uploadTtlMs) / 1000) * 1000).toISOString();
  const plan = planImport(body, existing, {
    urlRefusal: deps.urlRefusal,
    maxFileBytes: deps.mediaMaxBytes,
    newUpload: () => ({ asset_id: deps.ids.uuid(), artifact_id: deps.ids.uuid(), expires_at: expiresAt }),
  });
  if (plan.media.some(([, item]) => !isSequenceItem(item))) {
    // Each file is checked again when it is imported; this only refuses a drive with nothing left.
    const left = await deps.balance.leftOf(who.driveId, who.mediaSecondsAllowance);
    if (left !== null && left <= 0) {
      throw new AppError('payment_required', `the drive has no media seconds left (${Math.floor(left)} s); ask its admin for more`);
    }
  }

  const jobId = importJobId(deps.ids.uuid());
  const projectId = body.project_id ?? deps.ids.uuid();
  const metadata = { partition_key: projectId, correlation_id: requestId, drive_id: who.driveId, user_id: who.userId };
  // Time-ordered event ids land at the end of the id index instead of on random pages (3x fewer writes per batch).
  const newId = () => deps.ids.uuidv7();

  if (!body.project_id && body.folder_name) {
    // Folders before the project that sits in them; each level is created once, as needed.
    await ensureFolders(deps.store, who, body.folder_name, { now, newId, metadata: { ...metadata, partition_key: projectId } });
  }
  if (!body.project_id) {
    // The project first: a crash between the two appends leaves an empty project, never a job
    // whose project is missing.
    await handleCommand(
      deps.store,
      streams.project(projectId),
      projectDecider,
      {
        type: 'CreateProject',
        project: {
          project_id: projectId,
          drive_id: who.driveId,
          name: body.project_name!,
          folder_path: body.folder_name ?? null,
          team_access: body.team_access ?? 'none',
          created_by: who.userId,
          job_id: jobId,
        },
        now,
      },
      { newId, metadata, expectNew: true },
    );
  }
  const url = projectUrl(deps.webUrl, projectId);
  await handleCommand(
    deps.store,
    streams.job(jobId),
    jobDecider,
    {
      type: 'QueueJob',
      job: {
        job_id: jobId,
        job_type: 'import/project_media',
        drive_id: who.driveId,
        project_id: projectId,
        project_url: url,
        created_by: who.userId,
        callback_url: body.callback_url ?? null,
        request: plan,
      },
      now,
    },
    { newId, metadata, expectNew: true },
  );
  const uploads = [...uploadsOf(plan)];
  const upload_urls =
    uploads.length === 0
      ? undefined
      : Object.fromEntries(
          uploads.map(([ref, u]) => [
            ref,
            {
              upload_url: deps.uploadUrl({ jobId, driveId: who.driveId, projectId, ref, ...u }),
              asset_id: u.asset_id,
              artifact_id: u.artifact_id,
            },
          ]),
        );
  return { job_id: jobId, drive_id: who.driveId, project_id: projectId, project_url: url, ...(upload_urls && { upload_urls }) };
}

async function loadExistingProject(deps: ImportDeps, who: Principal, projectId: string): Promise<Set<string>> {
  const { state } = await loadState(deps.store, streams.project(projectId), projectDecider);
  if (!state.exists) throw notFound(`project ${projectId} does not exist`);
  if (state.project.drive_id !== who.driveId) throw forbidden(`project ${projectId} belongs to another drive`);
  return new Set(state.media.keys());
}

/** One read of the job stream: the drive check and the decision see the same state. */
export async function cancelJob(deps: ImportDeps, who: Principal, jobId: string, requestId: string): Promise<void> {
  await handleCommand(
    deps.store,
    streams.job(jobId),
    jobDecider,
    { type: 'CancelJob', now: deps.clock.now().toISOString() },
    {
      newId: () => deps.ids.uuidv7(),
      check: (state) => {
        if (state.status === 'none') throw notFound(`job ${jobId} does not exist`);
        if (state.job.drive_id !== who.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
      },
      metadata: (state) => ({
        partition_key: state.status === 'none' ? jobId : state.job.project_id,
        correlation_id: requestId,
        drive_id: who.driveId,
        user_id: who.userId,
      }),
    },
  );
}

/** Asks for the job's webhook to be delivered again now (an extension: POST /jobs/{job_id}/deliveries). */
export async function requestRedelivery(deps: ImportDeps, who: Principal, jobId: string): Promise<void> {
  const { state: job } = await loadState(deps.store, streams.job(jobId), jobDecider);
  if (job.status === 'none') throw notFound(`job ${jobId} does not exist`);
  if (job.job.drive_id !== who.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
  if (!job.job.callback_url) throw notFound(`job ${jobId} has no callback_url, so there is nothing to deliver`);
  await handleCommand(
    deps.store,
    streams.delivery(jobId),
    deliveryDecider,
    { type: 'RequestRedelivery', by: who.userId, now: deps.clock.now().toISOString() },
    {
      newId: () => deps.ids.uuidv7(),
      metadata: { partition_key: job.job.project_id, drive_id: who.driveId, user_id: who.userId },
      // Before the job stopped there is no delivery yet: say so plainly.
      check: (state) => {
        if (!state.exists)
          throw new AppError('conflict', `job ${jobId} has not stopped yet: its webhook is sent when it does`, {
            extra: { state: job.status },
          });
      },
    },
  );
}
