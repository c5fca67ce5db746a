import { pipeline, Transform } from 'node:stream';
import type { projectDecider } from '../../lib/app/deciders';
import { AppError } from '../../lib/domain/errors';
import type { ImportWorkDeps } from './import-work';
import type { JobContext } from './job-runner';

/** One URL item: download it through the outbound guard into the blob store, then probe it. */

const USER_AGENT = 'Servicebot/1.0';

export type FileOutcome = Parameters<typeof projectDecider.decide>[0] extends infer C
  ? C extends { type: 'AddMedia'; file: infer F }
    ? F
    : never
  : never;

export async function importOne(
  deps: ImportWorkDeps,
  ctx: JobContext,
  ref: string,
  item: { url: string; language: string | null },
  report: (fraction: number) => Promise<void>,
): Promise<FileOutcome> {
  const limit = timeLimit(ctx.signal, deps.downloadTimeoutMs);
  try {
    return await fetchAndProbe(deps, ctx, ref, item, report, limit.signal);
  } catch (err) {
    throw limit.explain(err);
  } finally {
    limit.clear();
  }
}

async function fetchAndProbe(
  deps: ImportWorkDeps,
  ctx: JobContext,
  ref: string,
  item: { url: string; language: string | null },
  report: (fraction: number) => Promise<void>,
  signal: AbortSignal,
): Promise<FileOutcome> {
  const response = await deps.fetcher.get(item.url, { signal, headers: { 'user-agent': USER_AGENT } });
  if (response.contentLength !== undefined && response.contentLength > deps.mediaMaxBytes) {
    response.body.destroy();
    throw new AppError('invalid_input', `the file is ${response.contentLength} bytes; the limit is ${deps.mediaMaxBytes}`);
  }
  const key = `${ctx.job.drive_id}/${ctx.job.project_id}/${deps.ids.uuid()}${extensionOf(item.url)}`;
  let received = 0;
  let lastReport = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      if (response.contentLength && received - lastReport > response.contentLength / 20) {
        lastReport = received;
        void report(0.8 * (received / response.contentLength!)).catch(() => undefined);
      }
      cb(null, chunk);
    },
  });
  // pipeline (not pipe) so an aborted or failed download errors the stream the blob store reads.
  const counted = pipeline(response.body, counter, () => undefined);
  const { size } = await deps.blobs.put(key, counted, { signal });
  try {
    await report(0.85);
    const probe = await deps.prober.probe(deps.blobs.localPath(key), { signal });
    if (probe.type === 'other') throw new AppError('invalid_input', 'the file has no audio, video or image stream');
    return {
      project_id: ctx.job.project_id,
      ref,
      media_type: probe.type,
      duration_seconds: probe.type === 'image' ? null : (probe.durationSeconds ?? 0),
      blob_key: key,
      size_bytes: size,
      has_audio: probe.hasAudio,
      has_video: probe.hasVideo,
      source_url: item.url,
      language: item.language,
      tracks: null,
      job_id: ctx.job.job_id,
    };
  } catch (err) {
    await deps.blobs.delete(key).catch(() => undefined);
    throw err;
  }
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

const extensionOf = (url: string): string => {
  const m = /\.([A-Za-z0-9]{1,5})$/.exec(new URL(url).pathname);
  return m ? `.${m[1].toLowerCase()}` : '';
};
