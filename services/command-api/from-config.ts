import { join } from 'node:path';
import { openBlobStore, openSigningSecret, openUrlRefusal } from '../../lib/adapters/from-config';
import { openAgentCatalog } from '../../lib/adapters/agent/catalog-file';
import { createLocalUploadStore } from '../../lib/adapters/local/upload-store';
import type { Catalog } from '../../lib/domain/agent/catalog';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { commandHandler } from '../../lib/app/command-handler';
import { jobDecider, type JobCommand } from '../../lib/domain/job';
import { keyedSerial } from '../../lib/app/keyed-serial';
import type { Config } from '../../lib/config';
import { isRejection } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { EventStore } from '../../lib/ports/event-store';
import type { ImportDeps } from '../../lib/app/import';
import { uploadUrl, type UploadParams, type UploadRouteDeps } from './uploads';
import type { Logger } from 'pino';
import { createAdmission, type Admission } from '../../lib/app/admission';
import type { ReadQueries } from '../../lib/ports/read-store';
import type { Metrics } from '../../lib/observability/metrics';

/** What the command API needs beyond the shared HTTP pieces, from configuration (main.ts and the all-in-one server). */
export function commandDeps(
  config: Config,
  store: EventStore,
  read: { queries: Pick<ReadQueries, 'count'>; logger: Logger; metrics?: Pick<Metrics, 'watchAdmission'> },
): Omit<ImportDeps, 'balance'> & { uploads: UploadRouteDeps; blobs: BlobStore; agentCatalog: Catalog; admission: Admission } {
  const secret = openSigningSecret(config);
  const admission = createAdmission({ queries: read.queries, limit: config.maxUnfinishedJobsPerDrive, log: read.logger });
  read.metrics?.watchAdmission(admission.stats);
  const blobs = openBlobStore(config);
  return {
    store,
    admission,
    clock: systemClock,
    ids: randomIds,
    webUrl: config.webUrl,
    agentCatalog: openAgentCatalog(config.agent),
    urlRefusal: openUrlRefusal(config),
    uploadTtlMs: config.uploadUrlTtlSeconds * 1000,
    mediaMaxBytes: config.mediaMaxBytes,
    uploadBytesPerRequest: config.uploadBytesPerRequest,
    uploadUrl: signedUploadUrl(config.baseUrl, secret),
    // Where edits by text read transcripts.
    blobs,
    // Staged beside the blobs (the same volume), so a finished upload moves in with a rename.
    uploads: uploadRoutes({
      secret,
      store,
      blobs,
      limits: config.uploadLimits,
      uploads: createLocalUploadStore({ root: join(config.dataDir, 'uploads'), localPath: blobs.localPath }),
    }),
  };
}

/** `upload_url` of an upload item: its job, drive, project, reference, type and size, signed until it expires. */
export const signedUploadUrl =
  (baseUrl: string, secret: string): ImportDeps['uploadUrl'] =>
  (u) =>
    uploadUrl(
      baseUrl,
      {
        asset_id: u.asset_id,
        job_id: u.jobId,
        drive_id: u.driveId,
        project_id: u.projectId,
        media_ref: u.ref,
        content_type: u.content_type,
        file_size: u.file_size,
        extra: { artifact_id: u.artifact_id },
      },
      { secret, expiresAt: new Date(u.expires_at) },
    );

/** A job's stream takes many uploads' records: a conflict with another process is retried after 10, 20, 40… ms (at most 500), jittered. */
const RECORD_ATTEMPTS = 10;
const recordBackoff = (attempt: number) => Math.random() * Math.min(500, 10 * 2 ** attempt);

/**
 * The signed upload routes: a finished upload is recorded on its job, which then goes on by itself.
 * A job's records and progress go one after another in this process (issue 19: 60 PUTs to one job
 * at once exhausted the handler's retries), and a progress report still waiting is replaced by a
 * newer one rather than queued behind it.
 */
export function uploadRoutes(
  deps: Pick<UploadRouteDeps, 'secret' | 'uploads' | 'limits'> & { store: EventStore; blobs: Pick<BlobStore, 'delete'> },
): UploadRouteDeps {
  const jobs = commandHandler(deps.store, jobDecider, streams.job);
  const serial = keyedSerial();
  /** `command` is made when the job's turn comes, so a waiting progress report sends the latest bytes. */
  const onJob = (p: UploadParams, command: () => JobCommand) =>
    serial(p.job_id, () =>
      jobs.handle(p.job_id, command(), {
        newId: randomIds.uuidv7,
        metadata: { partition_key: p.project_id, drive_id: p.drive_id },
        maxAttempts: RECORD_ATTEMPTS,
        retryDelayMs: recordBackoff,
      }),
    );
  const recorded = (p: UploadParams, blobKey: string, size: number) =>
    ({ job_id: p.job_id, ref: p.media_ref, asset_id: p.asset_id, blob_key: blobKey, size_bytes: size }) as const;
  const now = () => systemClock.now().toISOString();
  return {
    secret: deps.secret,
    uploads: deps.uploads,
    limits: deps.limits,
    clock: systemClock,
    blobKeyFor: (p) => `${p.drive_id}/${p.project_id}/${p.asset_id}`,
    checkJob: async (p) => {
      const { state } = await jobs.load(p.job_id);
      // The job's record answers for an upload it holds: its staging mark goes once the job starts.
      const held = state.status === 'none' ? undefined : state.uploads.get(p.media_ref);
      if (held?.asset_id === p.asset_id) return { recordedSize: held.size_bytes };
      // The job's own rule, as recording the upload would apply it.
      const decided = jobDecider.decide({ type: 'RecordUpload', upload: recorded(p, '', 0), now: now() }, state);
      if (isRejection(decided)) throw decided.error;
    },
    discardBlob: (blobKey) => deps.blobs.delete(blobKey),
    recordProgress: latestOnly((p, bytes) =>
      onJob(p, () => ({
        type: 'RecordUploadProgress',
        progress: { job_id: p.job_id, ref: p.media_ref, bytes: bytes(), total: p.file_size },
        now: now(),
      })),
    ),
    recordUpload: async (p, { blobKey, size }) => {
      await onJob(p, () => ({ type: 'RecordUpload', upload: recorded(p, blobKey, size), now: now() }));
    },
  };
}

/**
 * Progress of an upload told through `tell`, where a report still waiting for its turn takes the
 * bytes of a newer one instead of a second place in the job's queue: the job needs the latest only.
 * `tell` reads the bytes with `bytes()` when its turn comes.
 */
function latestOnly(tell: (p: UploadParams, bytes: () => number) => Promise<unknown>) {
  const waiting = new Map<string, { bytes: number; told: Promise<unknown> }>();
  return async (p: UploadParams, bytes: number): Promise<void> => {
    const queued = waiting.get(p.asset_id);
    if (queued) {
      queued.bytes = Math.max(queued.bytes, bytes);
      await queued.told;
      return;
    }
    const entry = { bytes, told: Promise.resolve() as Promise<unknown> };
    waiting.set(p.asset_id, entry);
    entry.told = tell(p, () => {
      waiting.delete(p.asset_id); // its turn: a later report queues anew
      return entry.bytes;
    });
    await entry.told;
  };
}
