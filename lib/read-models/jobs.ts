import { lastUploadExpiry } from '../domain/import';
import type { ReadModel } from '../app/read-models';
import { streamCategory } from '../domain/ids';
import type { JobEvent } from '../domain/job';
import { ignoreUnknown } from '../domain/errors';
import type { StoredEvent } from '../ports/event-store';
import type { Doc } from '../ports/read-store';

/**
 * The `jobs` read model: one document per job, shaped as the Job resource, plus `_id`, `_rev`
 * and internal fields whose names start with `_` (never rendered):
 * - `_uploads_until`: for a job with upload items that no worker has started yet, when the last
 *   upload URL expires; the processors start such a job then at the latest. Removed once a
 *   worker starts the job.
 * - `_ended_at`: for a stopped or cancelled job, the `$all` position of the event that ended it.
 *   A final state is shown only once every read model has projected that far (read-your-writes,
 *   lib/app/consistency.ts): the job's effects were appended before it.
 *
 * A job whose upload bytes are arriving reads as `running`, with `uploading <ref>` progress by
 * bytes, although no worker holds it yet: the service is working on it.
 */

export const JOBS = 'jobs';
export const JOB_INDEXES = [
  ['drive_id', 'created_at'],
  ['drive_id', 'project_id', 'created_at'],
  ['drive_id', 'job_type', 'created_at'],
  // Admission control counts a drive's unfinished jobs (lib/app/admission.ts).
  ['drive_id', 'job_state'],
  ['_uploads_until'],
];

export function evolveJobDoc(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as JobEvent;
  switch (event.type) {
    case 'JobQueued': {
      const d = event.data;
      const uploadsUntil = d.job_type === 'import/project_media' ? lastUploadExpiry(d.request) : undefined;
      return {
        ...(uploadsUntil && { _uploads_until: uploadsUntil }),
        _id: d.job_id,
        _rev: stored.revision,
        job_id: d.job_id,
        job_type: d.job_type,
        job_state: 'queued',
        created_at: d.created_at,
        drive_id: d.drive_id,
        project_id: d.project_id,
        project_url: d.project_url,
      };
    }
    case 'JobStarted': {
      if (!doc) return null;
      const { _uploads_until: _u, ...rest } = doc;
      return { ...rest, job_state: 'running', progress: { label: 'starting', percent: 0, last_update_at: event.data.started_at } } as Doc;
    }
    case 'UploadProgressed': {
      if (!doc || doc._uploads_until === undefined || (doc.job_state !== 'queued' && doc.job_state !== 'running')) return doc;
      const percent = Math.floor((100 * event.data.bytes) / Math.max(1, event.data.total));
      return { ...doc, job_state: 'running', progress: { label: `uploading ${event.data.ref}`, percent, last_update_at: event.data.at } };
    }
    case 'JobProgressed':
      if (!doc || doc.job_state !== 'running') return doc;
      return { ...doc, progress: { label: event.data.label, percent: event.data.percent, last_update_at: event.data.at } };
    case 'JobInterrupted':
      if (!doc || doc.job_state !== 'running') return doc;
      return { ...doc, progress: { ...(doc.progress as object), label: 'interrupted; resumes shortly', last_update_at: event.data.at } };
    case 'JobStopped': {
      if (!doc) return null;
      const { progress: _p, _uploads_until: _u, ...rest } = doc;
      return {
        ...rest,
        _ended_at: stored.position,
        job_state: 'stopped',
        stopped_at: event.data.stopped_at,
        result: event.data.result,
        project_url: event.data.project_url ?? doc.project_url,
      } as Doc;
    }
    case 'JobCancelled': {
      if (!doc) return null;
      const { progress: _p, _uploads_until: _u, ...rest } = doc;
      return { ...rest, _ended_at: stored.position, job_state: 'cancelled', stopped_at: event.data.stopped_at } as Doc;
    }
    case 'JobLeaseRenewed':
    case 'JobAttemptFailed':
    case 'MediaSecondsCharged':
    case 'UploadReceived':
      return doc;
    default:
      return ignoreUnknown(event, doc);
  }
}

/** Where a final job document's ending event sits in `$all` (null: the job has not ended). */
export const endedAt = (doc: Doc): string | null => (typeof doc._ended_at === 'string' ? doc._ended_at : null);

/** The Job resource as the API returns it (and the webhook will POST it). */
export function renderJob(doc: Doc): Record<string, unknown> {
  const job: Record<string, unknown> = {};
  for (const key in doc) if (key[0] !== '_') job[key] = doc[key];
  return job;
}

const JOB_EVENTS = [
  'JobQueued',
  'UploadReceived',
  'UploadProgressed',
  'JobStarted',
  'JobLeaseRenewed',
  'JobProgressed',
  'MediaSecondsCharged',
  'JobStopped',
  'JobCancelled',
  'JobInterrupted',
  'JobAttemptFailed',
] as const satisfies readonly JobEvent['type'][];

export const jobsModel: ReadModel = {
  name: JOBS,
  // 2: `_ended_at`.
  version: 2,
  handles: new Set(JOB_EVENTS),
  docId: (e) => (streamCategory(e.streamId) === 'job' ? String(e.data.job_id) : null),
  evolve: evolveJobDoc,
  indexes: JOB_INDEXES,
};
