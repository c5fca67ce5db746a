import type { Logger } from 'pino';
import { uploadsOf } from '../../../lib/domain/import';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { UploadStore } from '../../../lib/ports/upload-store';
import type { ProcessorHandlers } from '../handlers';
import type { Job } from '../job-type';

/**
 * What staging holds of a job's uploads, once the job takes no more of them (issue 19): a file
 * whose PUT finished but was never recorded on the job (its answer was a 503, or the command API
 * stopped in between) belongs to nobody, so it goes; then the staged bytes and completion marks,
 * whose answers the job's record gives from now on. Called with the job started (every attempt:
 * it is idempotent) or cancelled, never while it is queued: a record can then no longer land, as
 * the job refuses it and the command API removes the file itself.
 */
export async function releaseUploads(
  deps: { on: Pick<ProcessorHandlers, 'jobs'>; blobs: Pick<BlobStore, 'delete'>; uploads?: Pick<UploadStore, 'received' | 'forget'> },
  job: Job<'import/project_media'>,
  log: Logger,
): Promise<void> {
  const uploads = uploadsOf(job.request);
  if (uploads.size === 0 || !deps.uploads) return;
  const { state } = await deps.on.jobs.load(job.job_id);
  let unrecorded = 0;
  for (const [ref, upload] of uploads) {
    try {
      const staged = await deps.uploads.received(upload.asset_id);
      const owned = state.status !== 'none' && state.uploads.get(ref)?.blob_key === staged.blobKey;
      if (staged.complete && staged.blobKey && !owned) {
        await deps.blobs.delete(staged.blobKey);
        unrecorded += 1;
      }
      await deps.uploads.forget(upload.asset_id);
    } catch (err) {
      log.warn({ err, asset_id: upload.asset_id }, 'could not release a staged upload');
    }
  }
  if (unrecorded > 0) log.info({ job_id: job.job_id, removed_files: unrecorded }, 'uploaded files never recorded on their job removed');
}
