import { pipeline, Transform } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { AppError, OutboundError } from '../../../lib/domain/errors';
import type { ImportWorkDeps } from './work';
import type { JobContext } from '../job-runner';

/** One URL item: download it through the outbound guard into the blob store. */

const USER_AGENT = 'Servicebot/1.0';

/** The downloaded file, stored as a blob. */
export type Downloaded = { readonly blobKey: string; readonly size: number };

/**
 * Waits before each new try of a file that is not there yet: storage that is eventually
 * consistent can answer 404 (or 403, as S3 does without list rights) for an object written a
 * moment ago. About 15 s in all, within the download's time limit.
 */
export const NOT_FOUND_RETRY_DELAYS_MS: readonly number[] = [1000, 2000, 4000, 8000];

/**
 * Downloads `url` into a new blob under the download time limit, reporting the fraction of bytes
 * received when the size is known. With `retryUntilFound`, a 404 or 403 is tried again after
 * each of `NOT_FOUND_RETRY_DELAYS_MS` before the file fails.
 */
export async function download(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  url: string,
  report: (fraction: number) => void,
  options: { readonly retryUntilFound?: boolean } = {},
): Promise<Downloaded> {
  const limit = timeLimit(ctx.signal, deps.downloadTimeoutMs);
  const delays = options.retryUntilFound ? NOT_FOUND_RETRY_DELAYS_MS : [];
  try {
    for (let retry = 0; ; retry++) {
      try {
        return await fetchToBlob(deps, ctx, url, report, limit.signal);
      } catch (err) {
        const status = notThereYet(err);
        if (status === null || retry >= delays.length) throw retry > 0 ? stillMissing(err, retry) : err;
        ctx.log.info({ host: new URL(url).host, status, retry: retry + 1, delay_ms: delays[retry] }, 'file not there yet; trying again');
        await delay(delays[retry], undefined, { signal: limit.signal });
      }
    }
  } catch (err) {
    throw limit.explain(err);
  } finally {
    limit.clear();
  }
}

/** The 404 or 403 a store answers for an object it does not serve yet, else null. */
function notThereYet(err: unknown): 403 | 404 | null {
  const status = err instanceof OutboundError && err.reason === 'bad_status' ? err.peerStatus : undefined;
  return status === 403 || status === 404 ? status : null;
}

/** The last 404 or 403 of a file that never appeared, saying how long it was waited for. */
function stillMissing(err: unknown, retries: number): unknown {
  if (!(err instanceof Error) || notThereYet(err) === null) return err;
  const waited = NOT_FOUND_RETRY_DELAYS_MS.slice(0, retries).reduce((a, b) => a + b, 0) / 1000;
  return new AppError('invalid_input', `${err.message}, also after ${retries} retries over ${waited} s`);
}

async function fetchToBlob(
  deps: ImportWorkDeps,
  ctx: JobContext<'import/project_media'>,
  url: string,
  report: (fraction: number) => void,
  signal: AbortSignal,
): Promise<Downloaded> {
  const response = await deps.fetcher.get(url, { signal, headers: { 'user-agent': USER_AGENT } });
  const expected = response.contentLength;
  if (expected !== undefined && expected > deps.mediaMaxBytes) {
    response.body.destroy();
    throw new AppError('invalid_input', `the file is ${expected} bytes; the limit is ${deps.mediaMaxBytes}`);
  }
  // Never the URL's extension: a name ending in `.m3u8` (or `.ffconcat`) would pick a playlist
  // demuxer for the file. The probe reads what the bytes are.
  const blobKey = `${ctx.job.drive_id}/${ctx.job.project_id}/${deps.ids.uuid()}`;
  let received = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      if (expected) report(Math.min(1, received / expected));
      cb(null, chunk);
    },
  });
  // pipeline (not pipe) so an aborted or failed download errors the stream the blob store reads.
  const counted = pipeline(response.body, counter, () => undefined);
  const { size } = await deps.blobs.put(blobKey, counted, { signal });
  return { blobKey, size };
}

/**
 * The download's time limit, which the job's own signal also ends. Not `AbortSignal.any` over
 * `AbortSignal.timeout`: on Node 20 nothing holds the timeout signal, so it can be collected and
 * the limit silently vanish under load. Here the timer is held until `clear`.
 */
function timeLimit(jobSignal: AbortSignal, ms: number) {
  const controller = new AbortController();
  const expired = new AppError('invalid_input', `the download took longer than ${ms / 1000} s and was stopped`);
  const forward = () => controller.abort(jobSignal.reason);
  jobSignal.addEventListener('abort', forward, { once: true });
  if (jobSignal.aborted) forward();
  const timer = setTimeout(() => controller.abort(expired), ms);
  return {
    signal: controller.signal,
    /** Whatever a stopped download threw (an abort error, a broken stream), the limit is the reason. */
    explain: (err: unknown) => (controller.signal.reason === expired ? expired : err),
    clear() {
      clearTimeout(timer);
      jobSignal.removeEventListener('abort', forward);
    },
  };
}
