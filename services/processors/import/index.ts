import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { awaitedUploads } from '../../../lib/domain/job';
import type { ReadStore } from '../../../lib/ports/read-store';
import { JOBS } from '../../../lib/read-models/jobs';
import type { JobTypeDefinition } from '../job-type';
import { discardUploads, importMedia, type ImportWorkDeps } from './work';

/** What the import job type needs besides the engine's own ports. */
export type ImportDeps = ImportWorkDeps & {
  /** The `jobs` read model: queued jobs whose upload URLs have expired are found there. */
  read: ReadStore;
  logger: Logger;
  /** How often to look for jobs whose uploads can no longer arrive; default 15 s. */
  uploadScanMs?: number;
};

/**
 * `import/project_media` (DESIGN §3 Import). A job with upload items starts once none is awaited:
 * when its last upload arrives (the `UploadReceived` that completes it), or when the upload URLs
 * expire (the sweep); its missing files then fail.
 */
export const importJobType: JobTypeDefinition<'import/project_media', ImportDeps> = {
  type: 'import/project_media',
  // Its original name: the group's checkpoint stays where it was.
  group: 'import-processor',
  pool: 'import',
  work: importMedia,
  ready: (state, now) => awaitedUploads(state, now).length === 0,
  wakesOn: ['UploadReceived'],
  sweep: scanExpiredUploads,
  afterCancel: discardUploads,
  // A file that is fetched, probed and composed within it (most short clips) reports no progress:
  // four fsynced appends, projected and pushed to every listener, for a job over before a poll.
  progressGraceMs: 250,
};

/**
 * Finds queued jobs whose upload URLs have all expired (the `jobs` read model's `_uploads_until`)
 * and starts them. Every replica may scan; the job's claim decides which one runs it.
 */
async function scanExpiredUploads(deps: ImportDeps, start: (jobId: string) => Promise<void>, signal: AbortSignal): Promise<void> {
  const every = deps.uploadScanMs ?? 15_000;
  while (!signal.aborted) {
    // The abortable sleep removes its listener when it ends: one per loop would pile up.
    await sleep(every, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return;
    try {
      const due = await deps.read.find(JOBS, { _uploads_until: { $lte: deps.clock.now().toISOString() } }, { limit: 100 });
      for (const doc of due)
        void start(doc._id).catch((err: unknown) => deps.logger.warn({ err, job_id: doc._id }, 'could not start a job'));
    } catch (err) {
      deps.logger.warn({ err }, 'could not look for jobs whose uploads expired');
    }
  }
}
