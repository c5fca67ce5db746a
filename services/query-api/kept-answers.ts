import { LRUCache } from 'lru-cache';
import type { CacheStats } from '../../lib/observability/metrics';
import type { Doc } from '../../lib/ports/read-store';
import { positionValue } from '../../lib/app/consistency';
import { endedAt, renderJob } from '../../lib/read-models/jobs';

/** `ended`: the `$all` position of the event that ended the job (null while it runs). */
type JobAnswer = { readonly source: string; readonly driveId: unknown; readonly json: string; readonly ended: bigint | null };

/** Answers kept by default: about 100 MB of answers and the document texts they were made from. */
const KEPT_ANSWERS = 200_000;

/**
 * `GET /jobs/{id}`, the route clients poll: the answer made from a job document is kept for as
 * long as the read model hands out the same document text, so a poll of an unchanged job neither
 * parses nor renders nor serializes (about a tenth of the request, measured). A job the read
 * model has not reached yet is folded from its stream and not kept: it is a moment old.
 *
 * At most `capacity` answers, the least recently read dropped first (lru-cache): the jobs being
 * polled stay while finished ones nobody reads go. Emptied whole when full, as it was, every
 * poll after each 200,000th new job read missed at once.
 */
export function keptJobAnswers(capacity = KEPT_ANSWERS) {
  const kept = new LRUCache<string, JobAnswer>({ max: capacity });
  const answer = (doc: Doc, source: string): JobAnswer => {
    const ended = endedAt(doc);
    return { source, driveId: doc.drive_id, json: JSON.stringify(renderJob(doc)), ended: ended === null ? null : positionValue(ended) };
  };
  let hits = 0;
  let misses = 0;
  return {
    async of(jobId: string, text: () => Promise<string | null>, fold: () => Promise<Doc | null>): Promise<JobAnswer | null> {
      const source = await text();
      if (source === null) {
        const folded = await fold();
        return folded && answer(folded, '');
      }
      const hit = kept.get(jobId);
      if (hit?.source === source) {
        hits += 1;
        return hit;
      }
      misses += 1;
      const made = answer(JSON.parse(source) as Doc, source);
      kept.set(jobId, made);
      return made;
    },
    /** Polls answered from a kept answer, and reads of a document that made a new one. */
    stats: (): CacheStats => ({ entries: kept.size, hits, misses }),
  };
}
