import { join } from 'node:path';
import { openBlobStore, openSigningSecret, openUrlRefusal } from '../../lib/adapters/from-config';
import { createLocalUploadStore } from '../../lib/adapters/local/upload-store';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { handleCommand } from '../../lib/app/command-handler';
import { jobDecider } from '../../lib/app/deciders';
import type { Config } from '../../lib/config';
import { streams } from '../../lib/domain/ids';
import type { EventStore } from '../../lib/ports/event-store';
import type { ImportDeps } from '../../lib/app/import';
import { uploadUrl, type UploadRouteDeps } from './uploads';

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
export function uploadRoutes(deps: Pick<UploadRouteDeps, 'secret' | 'uploads'> & { store: EventStore }): UploadRouteDeps {
  return {
    ...deps,
    clock: systemClock,
    blobKeyFor: (p) => `${p.drive_id}/${p.project_id}/${p.asset_id}`,
    recordProgress: async (p, bytes) => {
      await handleCommand(
        deps.store,
        streams.job(p.job_id),
        jobDecider,
        {
          type: 'RecordUploadProgress',
          progress: { job_id: p.job_id, ref: p.media_ref, bytes, total: p.file_size },
          now: systemClock.now().toISOString(),
        },
        { newId: randomIds.uuidv7, metadata: { partition_key: p.project_id, drive_id: p.drive_id } },
      );
    },
    recordUpload: async (p, { blobKey, size }) => {
      await handleCommand(
        deps.store,
        streams.job(p.job_id),
        jobDecider,
        {
          type: 'RecordUpload',
          upload: { job_id: p.job_id, ref: p.media_ref, asset_id: p.asset_id, blob_key: blobKey, size_bytes: size },
          now: systemClock.now().toISOString(),
        },
        { newId: randomIds.uuidv7, metadata: { partition_key: p.project_id, drive_id: p.drive_id } },
      );
    },
  };
}
