import { publicationReadState, type PublicationReadState } from '../domain/publication';
import type { BlobStore } from '../ports/blob-store';
import type { Doc, ReadQueries } from '../ports/read-store';
import { JOBS } from '../read-models/jobs';
import { PUBLICATIONS, type PublicationDoc } from '../read-models/publications';

/**
 * Reading publications (issue 21) for the metadata endpoint, the share page and project detail:
 * the `publications` read model, and the `jobs` one to tell `processing` from `failed`.
 */

export type PublicationRead = { readonly doc: PublicationDoc; readonly state: PublicationReadState };

/** The publication whose share URL ends in `slug`, or null. */
export async function publicationBySlug(read: ReadQueries, slug: string): Promise<PublicationRead | null> {
  const [doc] = (await read.find(PUBLICATIONS, { slug }, { limit: 1 })) as PublicationDoc[];
  if (!doc) return null;
  const job = doc.render === null ? await read.get(JOBS, doc.started.job_id) : null;
  return { doc, state: publicationReadState(doc, endedWithoutRender(job)) };
}

/** A project's publications, newest first (listed from the moment their first job starts). */
export async function publicationsOfProject(read: ReadQueries, projectId: string): Promise<PublicationRead[]> {
  const docs = (await read.find(PUBLICATIONS, { project_id: projectId }, { sort: [['updated_at', -1]] })) as PublicationDoc[];
  const pending = docs.filter((d) => d.render === null).map((d) => d.started.job_id);
  const jobs = new Map((pending.length ? await read.getMany(JOBS, pending) : []).map((j) => [j._id, j]));
  return docs.map((doc) => ({ doc, state: publicationReadState(doc, endedWithoutRender(jobs.get(doc.started.job_id) ?? null)) }));
}

/**
 * A job that was cancelled, or stopped with anything but success, rendered nothing. A job that
 * stopped with success did write its render first; if the publication does not show it yet, the
 * render is on its way (processing), not lost. A job not projected yet is still processing too.
 */
function endedWithoutRender(job: Doc | null): boolean {
  if (!job) return false;
  if (job.job_state === 'cancelled') return true;
  return job.job_state === 'stopped' && (job.result as { status?: unknown } | undefined)?.status !== 'success';
}

/** Captions are a few kilobytes per minute; this bounds what one request reads into memory. */
export const MAX_CAPTIONS_BYTES = 8 * 1024 * 1024;

/** The WebVTT text of a render's captions, or null when the blob is gone. */
export async function readCaptions(blobs: BlobStore, key: string): Promise<string | null> {
  const blob = await blobs.open(key);
  if (!blob) return null;
  if (blob.size > MAX_CAPTIONS_BYTES) throw new Error(`captions blob ${key} is ${blob.size} bytes, more than ${MAX_CAPTIONS_BYTES}`);
  const chunks: Buffer[] = [];
  for await (const chunk of blob.read()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
