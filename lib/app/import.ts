import { signedExpiry } from './signed-urls';
import { AppError, forbidden, invalidInput, notFound } from '../domain/errors';
import { importJobId, projectUrl, streams } from '../domain/ids';
import { isSequenceItem, shownShortId, uploadsOf, type ImportPlan, type UploadItem } from '../domain/import';
import type { ProjectPartner } from '../domain/project';
import type { Clock, Ids } from '../ports/clock';
import type { EventStore, StreamAppend } from '../ports/event-store';
import { mediaSecondsRefusal } from './balance';
import type { Balances } from './balances';
import { appendInOrder, commandHandler, decideNew, type HandlerOf } from './command-handler';
import { IdempotencyKeyTaken } from './idempotency';
import { jobDecider } from '../domain/job';
import { projectDecider } from '../domain/project';
import { folderDecider } from '../domain/folder';
import { ensureFolders, type Folders } from './folders';
import { planImport, type ImportRequest } from './import-plan';
import type { Principal } from './tenancy';

/**
 * Starting an import: check the request against the project, then append the project (when new)
 * and the queued job. Shared by `POST /jobs/import/project_media` (command API) and the partner
 * import page (query API's web pages).
 */

export type { ImportRequest };

export type ImportDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  webUrl: string;
  /** Why a media or callback URL is refused from its text alone (internal address), or null. */
  urlRefusal: (url: string) => string | null;
  /** Whether the drive has any media seconds left (the processors reserve each file's). */
  balance: Pick<Balances, 'mediaSecondsLeft'>;
  /** How long an upload URL stays valid (3 hours unless configured). */
  uploadTtlMs: number;
  /** The largest media file an upload item may declare. */
  mediaMaxBytes: number;
  /**
   * What the upload items of one request may declare together (issue 19: one request declared
   * 100 × 2 GiB); UPLOAD_BYTES_PER_REQUEST's default of 10 GiB unless told.
   */
  uploadBytesPerRequest?: number;
  /** The signed URL a caller PUTs an upload item's bytes to. */
  uploadUrl: (upload: { jobId: string; driveId: string; projectId: string; ref: string } & UploadItem['upload']) => string;
};

export const DEFAULT_UPLOAD_BYTES_PER_REQUEST = 10 * 1024 ** 3;

/** `ImportDeps` with the handlers of the streams an import reads or writes, built once per app (`importsOn`). */
export type Imports = ImportDeps & {
  readonly projects: HandlerOf<typeof projectDecider>;
  readonly folders: Folders;
};

export const importsOn = (deps: ImportDeps): Imports => ({
  ...deps,
  projects: commandHandler(deps.store, projectDecider, streams.project),
  folders: commandHandler(deps.store, folderDecider, streams.folder),
});

/** What an import of URL items only needs (the partner import page): it has no upload URLs to sign. */
export type UrlImportDeps = Omit<ImportDeps, 'uploadTtlMs' | 'mediaMaxBytes' | 'uploadBytesPerRequest' | 'uploadUrl'>;

/** Full import deps that refuse any upload item (its declared size is over a limit of 0). */
export const urlImportOnly = (deps: UrlImportDeps): ImportDeps => ({
  ...deps,
  uploadTtlMs: 0,
  mediaMaxBytes: 0,
  uploadBytesPerRequest: 0,
  uploadUrl: () => {
    throw new Error('this import takes no upload items');
  },
});

export type ImportOptions = {
  /** Where a partner's import came from, kept on the new project. */
  readonly partner?: ProjectPartner;
  /**
   * The request's Idempotency-Key (lib/app/idempotency.ts): the append recording this answer goes
   * first in the batch of the project and the job, so the key and the import are written together
   * or not at all; a conflict on it throws `IdempotencyKeyTaken` and nothing else is written.
   * `beforeOtherWrites` is awaited before folders are made, which are written outside the batch.
   */
  readonly idempotency?: {
    readonly record: (response: ImportResponse) => StreamAppend;
    readonly beforeOtherWrites: () => Promise<void>;
  };
};

/** The answer to an accepted import (SPEC: POST /jobs/import/project_media). */
export type ImportResponse = {
  readonly job_id: string;
  readonly drive_id: string;
  readonly project_id: string;
  readonly project_url: string;
  readonly upload_urls?: Record<string, { upload_url: string; asset_id: string; artifact_id: string }>;
};

/** A checked import whose ids are chosen and nothing is written yet (see `prepareImport`). */
export type PreparedImport = {
  readonly body: ImportRequest;
  readonly plan: ImportPlan;
  readonly projectId: string;
  readonly jobId: string;
  /** The job's `project_url`, the same in the 201 and in the job from its start (`shownShortId`). */
  readonly url: string;
  readonly now: string;
  readonly options: ImportOptions;
};

/** Checks the request, then appends the project (when new) and the queued job. */
export async function acceptImport(deps: Imports, who: Principal, body: ImportRequest, requestId: string, options: ImportOptions = {}) {
  return commitImport(deps, who, await prepareImport(deps, who, body, options), requestId);
}

/**
 * Everything that can refuse an import, before anything is written: the request against the
 * project, URLs, sizes and the drive's balance. Its ids can then be reserved elsewhere first (an
 * import link records them when used) and `commitImport` writes.
 */
export async function prepareImport(
  deps: Imports,
  who: Principal,
  body: ImportRequest,
  options: ImportOptions = {},
): Promise<PreparedImport> {
  if (body.project_id && body.project_name) throw invalidInput('project_name and project_id are mutually exclusive');
  if (!body.project_id && !body.project_name) throw invalidInput('project_name or project_id is required');
  if (body.project_id && (body.folder_name || body.team_access)) {
    throw invalidInput(`${body.folder_name ? 'folder_name' : 'team_access'} applies only when creating a project (with project_name)`);
  }
  if (body.project_id && options.partner) throw new Error('prepareImport: partner applies to new projects only');
  const addMedia = body.add_media ?? {};
  if (Object.keys(addMedia).length === 0 && (body.add_compositions ?? []).length === 0) {
    throw invalidInput('add_media is required: give at least one media item');
  }

  const project = body.project_id ? await loadExistingProject(deps, who, body.project_id) : null;
  const existing = project?.media ?? new Set<string>();
  const now = deps.clock.now().toISOString();
  // Whole seconds: the signed URL carries its expiry in Unix seconds, and the job must agree with
  // it. Worked out only for an upload item (most imports have none), the same for each.
  const expiresAt = () => signedExpiry(new Date(now), deps.uploadTtlMs).toISOString();
  const plan = planImport(body, existing, {
    urlRefusal: deps.urlRefusal,
    maxFileBytes: deps.mediaMaxBytes,
    maxUploadBytes: deps.uploadBytesPerRequest ?? DEFAULT_UPLOAD_BYTES_PER_REQUEST,
    existingImages: project?.images,
    newUpload: () => ({ asset_id: deps.ids.uuid(), artifact_id: deps.ids.uuid(), expires_at: expiresAt() }),
  });
  if (plan.media.some(([, item]) => !isSequenceItem(item))) {
    // Each file is checked again when it is imported; this only refuses a drive that could import nothing.
    const refused = mediaSecondsRefusal(await deps.balance.mediaSecondsLeft(who.driveId, who.mediaSecondsAllowance));
    if (refused) throw new AppError('payment_required', refused);
  }
  // Time-ordered (v7, with 74 random bits): the new streams' names land at the end of the event
  // store's stream index, and the read models' keys, instead of on a random page each.
  const jobId = importJobId(deps.ids.uuidv7());
  const projectId = body.project_id ?? deps.ids.uuidv7();
  const url = projectUrl(deps.webUrl, projectId, shownShortId(jobId, plan, project?.shortIds ?? null));
  return { body, plan, projectId, jobId, url, now, options };
}

/** Appends what `prepareImport` checked: folders and the project when new, then the queued job. */
export async function commitImport(deps: Imports, who: Principal, prepared: PreparedImport, requestId: string): Promise<ImportResponse> {
  const { body, plan, projectId, jobId, url, now, options } = prepared;
  const metadata = { partition_key: projectId, correlation_id: requestId, drive_id: who.driveId, user_id: who.userId };
  // Time-ordered event ids land at the end of the id index instead of on random pages (3x fewer writes per batch).
  const newId = () => deps.ids.uuidv7();

  if (!body.project_id && body.folder_name) {
    await options.idempotency?.beforeOtherWrites();
    // Folders before the project that sits in them; each level is created once, as needed.
    await ensureFolders(deps.folders, who, body.folder_name, { now, newId, metadata: { ...metadata, partition_key: projectId } });
  }
  // The project first, in the same group commit where the store has one: a crash or a failure in
  // between leaves an empty project, never a job whose project is missing. Both streams were
  // just named with fresh UUIDs, so both are decided without reading.
  const appends: StreamAppend[] = [];
  if (!body.project_id) {
    const project = {
      project_id: projectId,
      drive_id: who.driveId,
      name: body.project_name!,
      folder_path: body.folder_name ?? null,
      team_access: body.team_access ?? 'none',
      created_by: who.userId,
      job_id: jobId,
      ...(options.partner && { partner: options.partner }),
    };
    appends.push(decideNew(streams.project(projectId), projectDecider, { type: 'CreateProject', project, now }, { newId, metadata }));
  }
  const job = {
    job_id: jobId,
    job_type: 'import/project_media' as const,
    drive_id: who.driveId,
    project_id: projectId,
    project_url: url,
    created_by: who.userId,
    callback_url: body.callback_url ?? null,
    request: plan,
  };
  appends.push(decideNew(streams.job(jobId), jobDecider, { type: 'QueueJob', job, now }, { newId, metadata }));
  // The answer is known before anything is written (the ids were chosen in prepareImport), so
  // an Idempotency-Key's record of it can lead the batch.
  const response = importResponse(deps, who, prepared, url);
  if (options.idempotency) appends.unshift(options.idempotency.record(response));
  const made = await appendInOrder(deps.store, appends);
  if (options.idempotency && made[0]?.ok === false) throw new IdempotencyKeyTaken();
  if (made.length < appends.length || made.some((r) => !r.ok)) {
    throw new AppError('unavailable', 'a new project or job id was taken by another request; send the request again', { retriable: true });
  }
  return response;
}

function importResponse(deps: ImportDeps, who: Principal, { plan, projectId, jobId }: PreparedImport, url: string): ImportResponse {
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

/** The existing project's media references and composition short ids. */
async function loadExistingProject(deps: Imports, who: Principal, projectId: string) {
  const { state } = await deps.projects.load(projectId);
  if (!state.exists) throw notFound(`project ${projectId} does not exist`);
  if (state.project.drive_id !== who.driveId) throw forbidden(`project ${projectId} belongs to another drive`);
  const images = new Set([...state.media].filter(([, m]) => m.media_type === 'image').map(([ref]) => ref));
  return { media: new Set(state.media.keys()), images, shortIds: new Set(state.compositions.map((c) => c.short_id)) };
}
