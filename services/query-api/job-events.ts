import type Router from '@koa/router';
import { PassThrough } from 'node:stream';
import type { Logger } from 'pino';
import { positionValue, type ReadYourWrites, type Watermark } from '../../lib/app/consistency';
import { createJobWatch } from '../../lib/app/job-watch';
import { foldDocument } from '../../lib/app/projection';
import { forbidden, invalidInput, notFound } from '../../lib/domain/errors';
import { isJobId, streams } from '../../lib/domain/ids';
import type { ApiContext } from '../../lib/http/middleware';
import { AppErrorWithHeaders } from '../../lib/http/middleware';
import type { EventStore } from '../../lib/ports/event-store';
import type { Doc, ReadQueries } from '../../lib/ports/read-store';
import type { SchemaRegistry } from '../../lib/http/schemas';
import { endedAt, evolveJobDoc, JOBS, renderJob } from '../../lib/read-models/jobs';

/**
 * `GET /v1/jobs/{job_id}/events`: the job document as Server-Sent Events, each time it changes,
 * until it is stopped or cancelled (docs/decisions.md, "Issue 23: live job events"). Each event
 * is `event: job`, `id: <the document's _rev>` (the revision of the job stream's last event it
 * folds: monotonic for the job) and `data: <exactly what GET /v1/jobs/{id} answers>`. The
 * shared waker (lib/app/job-watch.ts) reads the watched jobs again each time the read models'
 * watermark moves; a stream itself only writes.
 */

export type JobEventsOptions = {
  /** Streams one token may hold open at once (in this process); one more is a 429. */
  maxStreamsPerToken: number;
  /** A stream is ended after this long; the client resumes with Last-Event-ID. */
  maxStreamMs: number;
  /** Comments written this often to every open stream, so that proxies keep it open. */
  heartbeatMs: number;
  /** The `retry:` the stream tells EventSource clients to wait before they reconnect. */
  retryMs: number;
};

export const JOB_EVENTS_DEFAULTS: JobEventsOptions = {
  maxStreamsPerToken: 20,
  maxStreamMs: 3600_000,
  heartbeatMs: 15_000,
  retryMs: 2_000,
};

/** What a client over its stream bound is told to wait: streams end with their jobs, usually within seconds. */
const RETRY_AFTER_SECONDS = '5';
const LAST_EVENT_ID = /^\d{1,15}$/;

export type JobEventsDeps = {
  read: ReadQueries;
  schemas: SchemaRegistry;
  store: EventStore;
  logger: Logger;
  /** Final documents wait for their effects to be projected, as GET's do. */
  consistency?: ReadYourWrites;
  /** What wakes the streams (`onMove`); without one, a shared 100 ms timer does. */
  watermark?: Watermark;
  options?: Partial<JobEventsOptions>;
};

/** The open streams, for shutdown and for the tests (no stream or watcher left behind). */
export type JobEventStreams = {
  /** Ends every open stream (server shutdown) and stops the waker. */
  close(): void;
  open(): number;
  watched(): { jobs: number; watchers: number };
};

type OpenStream = { readonly body: PassThrough };

export function mountJobEvents(v1: Router, deps: JobEventsDeps): JobEventStreams {
  const options = { ...JOB_EVENTS_DEFAULTS, ...deps.options };
  const readJob = async (jobId: string): Promise<Doc | null> => {
    const text = await deps.read.getJson(JOBS, jobId);
    if (text !== null) return JSON.parse(text) as Doc;
    // Not projected yet (created a moment ago): folded from its stream, as GET does.
    return foldDocument(await deps.store.readStream(streams.job(jobId)), evolveJobDoc);
  };
  const watch = createJobWatch<Doc>({
    onMove: deps.watermark?.onMove?.bind(deps.watermark),
    read: readJob,
    onError: (err, jobId) => deps.logger.warn({ err, job_id: jobId }, 'job events: job not readable; waiting for the next change'),
  });
  const open = new Set<OpenStream>();
  const perToken = new Map<string, number>();
  // One timer for every stream's heartbeats; each stream ends at its lifetime by a timer of its own.
  let tick: NodeJS.Timeout | null = null;
  const beat = () => {
    for (const { body } of open) {
      // Ended but not yet closed (its last bytes still being read): nothing more may be written.
      if (!body.writableEnded && !body.destroyed) body.write(': keep-alive\n\n');
    }
  };

  v1.get('/jobs/:job_id/events', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const jobId = ctx.params.job_id;
    const query: Record<string, unknown> = { ...ctx.query };
    deps.schemas.assertQuery('job-events-query', query);
    const after = lastEventId(ctx.get('last-event-id'), query.last_event_id as string | undefined);
    const first = isJobId(jobId) ? await readJob(jobId) : null;
    if (!first) throw notFound(`job ${jobId} does not exist`);
    if (first.drive_id !== auth.driveId) throw forbidden(`job ${jobId} belongs to another drive`);
    const held = perToken.get(auth.tokenId) ?? 0;
    if (held >= options.maxStreamsPerToken) {
      throw new AppErrorWithHeaders(
        'rate_limit_exceeded',
        `at most ${options.maxStreamsPerToken} job event streams per token at once; close one or retry after the Retry-After seconds`,
        { 'Retry-After': RETRY_AFTER_SECONDS },
      );
    }

    const body = new PassThrough();
    const stream: OpenStream = { body };
    perToken.set(auth.tokenId, held + 1);
    open.add(stream);
    tick ??= setInterval(beat, options.heartbeatMs).unref();
    const lifetime = setTimeout(() => body.writableEnded || body.end(), options.maxStreamMs).unref();
    let unwatch: (() => void) | null = null;
    body.once('close', () => {
      clearTimeout(lifetime);
      unwatch?.();
      open.delete(stream);
      const left = (perToken.get(auth.tokenId) ?? 1) - 1;
      if (left > 0) perToken.set(auth.tokenId, left);
      else perToken.delete(auth.tokenId);
      if (open.size === 0 && tick) {
        clearInterval(tick);
        tick = null;
      }
    });
    // A client that went away: Koa destroys the body once the response closes, this says so too.
    ctx.res.once('close', () => body.destroy());

    // No socket idle timeout (the heartbeats keep the stream busy), no buffering by a proxy.
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.type = 'text/event-stream; charset=utf-8';
    ctx.set({ 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no', Connection: 'keep-alive' });
    ctx.body = body;
    ctx.flushHeaders();
    body.write(`retry: ${options.retryMs}\n\n`);

    const send = sender(body, after, deps.consistency);
    // A write that failed ends this stream only (the client resumes), logged rather than unhandled.
    const failed = (err: unknown) => {
      (ctx as unknown as ApiContext).state.log.warn({ err, job_id: jobId }, 'job events: stream ended by an error');
      body.destroy();
    };
    let chain = send(first).catch(failed);
    unwatch = watch.watch(jobId, (doc) => {
      if (doc) chain = chain.then(() => send(doc)).catch(failed);
    });
    // Ended before the watcher was registered (an already final job): nothing more to watch.
    if (body.destroyed || body.writableEnded) unwatch();
  });

  return {
    close() {
      watch.stop();
      for (const { body } of open) if (!body.writableEnded) body.end();
    },
    open: () => open.size,
    watched: watch.size,
  };
}

/** `Last-Event-ID` (header) or `last_event_id` (query, checked by its schema): null when neither. */
function lastEventId(header: string, query: string | undefined): number | null {
  if (header === '') return query === undefined ? null : Number(query);
  if (!LAST_EVENT_ID.test(header)) throw invalidInput('Last-Event-ID: must be an event id this stream sent (a non-negative integer)');
  return Number(header);
}

/**
 * Writes each document newer than the last one written (or than `after`, the client's
 * Last-Event-ID); a final one once its effects are readable (as GET shows it), and then ends the
 * stream. Called in order: each call waits for the one before.
 */
function sender(body: PassThrough, after: number | null, consistency: ReadYourWrites | undefined) {
  let last = after ?? -1;
  let lastJson = '';
  return async (doc: Doc): Promise<void> => {
    if (body.writableEnded || body.destroyed) return;
    const rev = Number(doc._rev);
    const ended = endedAt(doc);
    if (rev <= last) {
      // The client has this one already: a final job has nothing more to say.
      if (ended !== null) body.end();
      return;
    }
    if (ended !== null) {
      const effects = consistency?.until(positionValue(ended));
      if (effects) await effects;
      if (body.writableEnded || body.destroyed) return;
    }
    last = rev;
    const json = JSON.stringify(renderJob(doc));
    // A revision that changed nothing shown (a lease renewed) is not sent again.
    if (json !== lastJson || ended !== null) body.write(`event: job\nid: ${rev}\ndata: ${json}\n\n`);
    lastJson = json;
    if (ended !== null) body.end();
  };
}
