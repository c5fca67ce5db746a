import { join } from 'node:path';
import { openBlobStore, openSigningSecret, openUrlRefusal } from '../../lib/adapters/from-config';
import { createLocalUploadStore } from '../../lib/adapters/local/upload-store';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { commandHandler } from '../../lib/app/command-handler';
import { jobDecider } from '../../lib/domain/job';
import type { Config } from '../../lib/config';
import { isRejection } from '../../lib/domain/errors';
import { streams } from '../../lib/domain/ids';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { EventStore } from '../../lib/ports/event-store';
import type { ImportDeps } from '../../lib/app/import';
import { uploadUrl, type UploadParams, type UploadRouteDeps } from './uploads';

/** What the command API needs beyond the shared HTTP pieces, from configuration (main.ts and the all-in-one server). */
export function commandDeps(config: Config, store: EventStore): Omit<ImportDeps, 'balance'> & { uploads: UploadRouteDeps } {
  const secret = openSigningSecret(config);
  const blobs = openBlobStore(config);
  return {
    store,
    clock: systemClock,
    ids: randomIds,
    webUrl: config.webUrl,
    urlRefusal: openUrlRefusal(config),
    uploadTtlMs: config.uploadUrlTtlSeconds * 1000,
    mediaMaxBytes: config.mediaMaxBytes,
    uploadUrl: signedUploadUrl(config.baseUrl, secret),
    // Staged beside the blobs (the same volume), so a finished upload moves in with a rename.
    uploads: uploadRoutes({
      secret,
      store,
      blobs,
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

/** The signed upload routes: a finished upload is recorded on its job, which then goes on by itself. */
export function uploadRoutes(
  deps: Pick<UploadRouteDeps, 'secret' | 'uploads'> & { store: EventStore; blobs: Pick<BlobStore, 'delete'> },
): UploadRouteDeps {
  const jobs = commandHandler(deps.store, jobDecider, streams.job);
  const recorded = (p: UploadParams, blobKey: string, size: number) =>
    ({ job_id: p.job_id, ref: p.media_ref, asset_id: p.asset_id, blob_key: blobKey, size_bytes: size }) as const;
  return {
    secret: deps.secret,
    uploads: deps.uploads,
    clock: systemClock,
    blobKeyFor: (p) => `${p.drive_id}/${p.project_id}/${p.asset_id}`,
    // The job's own rule, as recording the upload would apply it.
    checkJob: async (p) => {
      const { state } = await jobs.load(p.job_id);
      const decided = jobDecider.decide({ type: 'RecordUpload', upload: recorded(p, '', 0), now: systemClock.now().toISOString() }, state);
      if (isRejection(decided)) throw decided.error;
    },
    discardBlob: (blobKey) => deps.blobs.delete(blobKey),
    recordProgress: async (p, bytes) => {
      await jobs.handle(
        p.job_id,
        {
          type: 'RecordUploadProgress',
          progress: { job_id: p.job_id, ref: p.media_ref, bytes, total: p.file_size },
          now: systemClock.now().toISOString(),
        },
        { newId: randomIds.uuidv7, metadata: { partition_key: p.project_id, drive_id: p.drive_id } },
      );
    },
    recordUpload: async (p, { blobKey, size }) => {
      await jobs.handle(
        p.job_id,
        {
          type: 'RecordUpload',
          upload: recorded(p, blobKey, size),
          now: systemClock.now().toISOString(),
        },
        { newId: randomIds.uuidv7, metadata: { partition_key: p.project_id, drive_id: p.drive_id } },
      );
    },
  };
}
