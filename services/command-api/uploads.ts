import Router from '@koa/router';
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import { signUrl, verifySignedUrl } from '../../lib/app/signed-urls';
import { AppError, conflict, forbidden, invalidInput } from '../../lib/domain/errors';
import { isUuid } from '../../lib/domain/ids';
import { UnsupportedMediaType } from '../../lib/http/middleware';
import type { Clock } from '../../lib/ports/clock';
import type { UploadStore } from '../../lib/ports/upload-store';
import { createUploadGate, uploadLimits, type UploadGate, type UploadLimits } from './upload-limits';

/**
 * PUT {base_url}/uploads/{asset_id}?<signed params>: direct uploads with the resumable-upload
 * semantics of Google Cloud Storage (which Mux direct uploads use). The signed URL is the only
 * credential. Without Content-Range the body is the whole file; with `bytes a-b/total` it is a
 * part; `bytes *\/total` with no body asks how far the upload is. An unfinished upload answers 308
 * with `Range: bytes=0-<n-1>` (none when nothing arrived), a finished one 200 `{asset_id, size}`.
 * Like GCS, a part may start before the end of what arrived (a retry whose answer was lost: the
 * bytes already held are skipped unchecked); one starting beyond it is refused.
 */

export const UPLOAD_URL_TTL_MS = 3 * 60 * 60 * 1000;
const UPLOADS_PATH = '/uploads';

export type UploadParams = {
  readonly asset_id: string;
  readonly job_id: string;
  readonly drive_id: string;
  readonly project_id: string;
  readonly media_ref: string;
  readonly content_type: string;
  readonly file_size: number;
  /** Further signed params the URL was made with (artifact_id…), returned as they were signed. */
  readonly extra: Readonly<Record<string, string>>;
};

export type UploadRouteDeps = {
  secret: string;
  clock: Clock;
  uploads: UploadStore;
  /** The blob key the finished file moves to; should be the same for the same params. */
  blobKeyFor: (params: UploadParams) => string;
  /**
   * Tells the job; idempotent (the job records an upload once). Called by every PUT that finds the
   * upload complete while staging still holds it: the job, not a flag beside the file, knows
   * whether it was told, so nothing in staging is rewritten after the job may have released it.
   */
  recordUpload: (params: UploadParams, upload: { blobKey: string; size: number }) => Promise<void>;
  /**
   * Throws the job's refusal (an AppError) when it takes no more uploads: it has started without
   * this one, or was cancelled. Asked before an unfinished upload stores a byte; what was staged
   * of it then goes. Answers `recordedSize` when the job already holds this upload: the staging
   * store forgets a finished upload once its job has started, and the job's record answers then.
   */
  checkJob?: (params: UploadParams) => Promise<{ recordedSize: number } | void>;
  /** Removes a finished upload's file that its job refused: nothing will ever read it. */
  discardBlob?: (blobKey: string) => Promise<void>;
  /**
   * Tells the job how many bytes have arrived (at most about once a second per request, and when a
   * part ends). Best effort: a failure is logged, never the upload's.
   */
  recordProgress?: (params: UploadParams, bytes: number) => Promise<void>;
  logger?: Logger;
  /** Uploads received at once, per drive and per process, and the idle deadline of a body; `uploadLimits()`'s where not told. */
  limits?: Partial<UploadLimits>;
  /** Where {base_url} is mounted; `/v1` unless told. */
  prefix?: string;
};

const FIXED = ['job_id', 'drive_id', 'project_id', 'media_ref', 'content_type', 'file_size'] as const;

/** The upload URL for one upload item: valid until `expiresAt` (3 hours from acceptance by the spec). */
export function uploadUrl(
  baseUrl: string,
  params: Omit<UploadParams, 'extra'> & { extra?: Record<string, string> },
  options: { secret: string; expiresAt: Date },
): string {
  if (!isUuid(params.asset_id)) throw new Error(`asset_id must be a UUID: ${params.asset_id}`);
  if (!Number.isSafeInteger(params.file_size) || params.file_size <= 0)
    throw new Error(`file_size must be a positive integer: ${params.file_size}`);
  const extra = params.extra ?? {};
  for (const name of [...FIXED, 'asset_id'])
    if (Object.hasOwn(extra, name)) throw new Error(`extra param ${name} would shadow a fixed one`);
  const signed = { ...extra, ...Object.fromEntries(FIXED.map((name) => [name, String(params[name])])) };
  return signUrl(baseUrl, `${UPLOADS_PATH}/${params.asset_id.toLowerCase()}`, signed, options);
}

export function createUploadRoutes(deps: UploadRouteDeps): Router {
  const router = new Router({ prefix: deps.prefix ?? '/v1', sensitive: true });
  const limits = uploadLimits(deps.limits);
  const bodies: Bodies = { gate: createUploadGate(limits), idleMs: limits.idleTimeoutMs };
  router.put(`${UPLOADS_PATH}/:asset_id`, async (ctx) => {
    try {
      await put(deps, bodies, ctx, authorise(deps, ctx, ctx.params.asset_id));
    } finally {
      if (!ctx.req.complete) leaveUnreadBody(ctx);
    }
  });
  return router;
}

/** Bodies up to this size that a refused PUT left unread are read to their end and dropped. */
const DRAINED_BYTES = 8 * 1024 * 1024;

/**
 * A PUT answered before its body was read (a tampered or expired URL, a refusal): a small body
 * declared by its length is read to its end and dropped, so the client, still sending, gets the
 * answer and may reuse the connection. Closed at once with unread bytes, the socket was reset
 * under a client still writing, which then saw "broken pipe" instead of the 403. A larger body,
 * or one of unknown length, closes the connection after the answer (never drained into the next
 * request); the server's timeouts bound a client that trickles.
 */
function leaveUnreadBody(ctx: Context): void {
  const declared = Number(ctx.req.headers['content-length']);
  if (Number.isSafeInteger(declared) && declared <= DRAINED_BYTES && !ctx.req.destroyed) ctx.req.resume();
  else ctx.set('Connection', 'close');
}

/** How bodies are received: admitted by the gate, cut after `idleMs` without a byte. */
type Bodies = { readonly gate: UploadGate; readonly idleMs: number };

/**
 * How long a status query (`bytes *\/total`) waits for a PUT in progress on its upload to end: a
 * client cut off mid-part asks at once, while the server still writes, truncates and syncs what
 * its body delivered; answered before that, the client would send those bytes again.
 */
const QUERY_SETTLE_MS = 2_000;

type Part = { kind: 'whole' } | { kind: 'query' } | { kind: 'part'; first: number; last: number };

async function put(deps: UploadRouteDeps, bodies: Bodies, ctx: Context, params: UploadParams): Promise<void> {
  const total = params.file_size;
  const part = parseContentRange(ctx.get('content-range'), total);
  if (part.kind === 'query' && (ctx.request.length ?? 0) > 0) {
    throw invalidInput('Content-Range bytes */<total> asks for progress: send it without a body');
  }
  if (part.kind !== 'query') checkBodyHeaders(ctx);

  // A status query waits a moment for a PUT in progress to end; a PUT with bytes never waits.
  const state = await deps.uploads.received(params.asset_id, { settleMs: part.kind === 'query' ? QUERY_SETTLE_MS : 0 });
  if (state.complete) {
    await record(deps, ctx, params, state.blobKey!, state.bytes);
    if (part.kind === 'query') return answerComplete(ctx, params, state.bytes);
    throw conflict(`the upload of ${params.media_ref} is already complete (${state.bytes} bytes)`, 'complete');
  }
  const held = await refuseUnlessJobTakesIt(deps, ctx, params);
  if (held) {
    if (part.kind === 'query') return answerComplete(ctx, params, held.recordedSize);
    throw conflict(`the upload of ${params.media_ref} is already complete (${held.recordedSize} bytes)`, 'complete');
  }
  const [first, last] = part.kind === 'part' ? [part.first, part.last] : [0, total - 1];
  const length = ctx.request.length;
  if (part.kind === 'whole' && length !== undefined && length > total) throw tooLarge(part, total);
  if (part.kind === 'part' && length !== undefined && length !== last - first + 1) {
    throw invalidInput(`Content-Length ${length} does not match Content-Range bytes ${first}-${last}/${total} (${last - first + 1} bytes)`);
  }
  if (part.kind === 'query' || last < state.bytes) {
    // Nothing new to write (a status query, or a retried part that is already held).
    return state.bytes === total ? finish(deps, ctx, params) : resumeIncomplete(ctx, state.bytes);
  }
  if (first > state.bytes) {
    setRange(ctx, state.bytes);
    throw conflict(`the upload has ${state.bytes} bytes, this part starts at ${first}: continue at ${state.bytes}`, 'incomplete');
  }

  const bytes = await receive(deps, bodies, ctx, params, { part, held: state.bytes, first, last });
  if (bytes === total) return finish(deps, ctx, params);
  if (part.kind === 'part') return resumeIncomplete(ctx, bytes);
  // A whole-file body that ended short: its bytes are kept, so the rest can follow as a part.
  setRange(ctx, bytes);
  throw invalidInput(
    `the body ended after ${bytes} of the file_size of ${total} bytes: send the rest with Content-Range: bytes ${bytes}-${total - 1}/${total}`,
  );
}

/**
 * Streams the request's new bytes (from `held` on; those before it are skipped) into the upload,
 * once the gate admits them; answers the bytes the upload then holds. The gate's slot is the
 * request's until its body is read or refused.
 */
async function receive(
  deps: UploadRouteDeps,
  bodies: Bodies,
  ctx: Context,
  params: UploadParams,
  range: { part: Part; held: number; first: number; last: number },
): Promise<number> {
  const { part, held, first, last } = range;
  const release = bodies.gate.admit(params.drive_id, last + 1 - held);
  const progress = progressReporter(deps, ctx, params, held);
  try {
    const body = requestBody(ctx.req, held - first, { onBytes: progress.add, idleMs: bodies.idleMs });
    const { bytes } = await deps.uploads.append(params.asset_id, held, body, { total: params.file_size, length: last + 1 - held });
    if (bytes !== params.file_size) progress.report(bytes);
    return bytes;
  } catch (err) {
    if (err instanceof AppError && err.code === 'payload_too_large') throw tooLarge(part, params.file_size);
    // What is held now (a body cut off or idle keeps its whole writes), for the client to resume from.
    if (err instanceof AppError) {
      const now = await deps.uploads.received(params.asset_id).catch(() => null);
      if (now) setRange(ctx, now.bytes);
    }
    throw err;
  } finally {
    release();
  }
}

async function finish(deps: UploadRouteDeps, ctx: Context, params: UploadParams): Promise<void> {
  const blobKey = deps.blobKeyFor(params);
  const { size } = await deps.uploads.complete(params.asset_id, blobKey);
  await record(deps, ctx, params, blobKey, size);
  logOf(deps, ctx)?.info({ asset_id: params.asset_id, job_id: params.job_id, size }, 'upload complete');
  answerComplete(ctx, params, size);
}

/** An upload its job no longer takes stores nothing more, and what it staged goes. Answers what the job holds of it, if anything. */
async function refuseUnlessJobTakesIt(deps: UploadRouteDeps, ctx: Context, params: UploadParams): Promise<{ recordedSize: number } | void> {
  if (!deps.checkJob) return;
  try {
    return await deps.checkJob(params);
  } catch (err) {
    if (!(err instanceof AppError)) {
      logOf(deps, ctx)?.error({ err, asset_id: params.asset_id, job_id: params.job_id }, 'could not read the upload’s job');
      throw new AppError('unavailable', 'the upload’s job could not be read; retry the request', { retriable: true });
    }
    await deps.uploads
      .discard(params.asset_id)
      .catch((e: unknown) => logOf(deps, ctx)?.warn({ err: e }, 'could not remove a refused upload'));
    throw err;
  }
}

async function record(deps: UploadRouteDeps, ctx: Context, params: UploadParams, blobKey: string, size: number): Promise<void> {
  try {
    await deps.recordUpload(params, { blobKey, size });
  } catch (err) {
    if (err instanceof AppError) {
      // The job refused the file (it started without it, or was cancelled, since the PUT began).
      if (err.code === 'conflict' || err.code === 'not_found') {
        await forgetRefused(deps, ctx, params.asset_id, blobKey);
      }
      throw err;
    }
    logOf(deps, ctx)?.error({ err, asset_id: params.asset_id, job_id: params.job_id }, 'upload stored but not recorded');
    throw new AppError('unavailable', 'the file is stored but its job could not be told yet; retry the request', { retriable: true });
  }
}

/** A finished file its job refused: nothing will ever read it, nor its mark (the job's refusal answers from now on). */
async function forgetRefused(deps: UploadRouteDeps, ctx: Context, assetId: string, blobKey: string): Promise<void> {
  try {
    await deps.discardBlob?.(blobKey);
    await deps.uploads.forget(assetId);
  } catch (err) {
    logOf(deps, ctx)?.warn({ err }, 'could not remove a refused upload');
  }
}

function authorise(deps: UploadRouteDeps, ctx: Context, assetId: string): UploadParams {
  const verdict = verifySignedUrl(`${UPLOADS_PATH}/${assetId}`, ctx.querystring, { secret: deps.secret, now: deps.clock.now() });
  if (verdict.ok) {
    const params = paramsOf(assetId, verdict.params);
    if (params) return params;
  } else if (verdict.reason === 'expired') {
    throw forbidden(`the upload URL expired at ${verdict.expiresAt.toISOString()}`);
  }
  throw forbidden('the upload URL is not valid: its signature does not match its path and parameters');
}

function paramsOf(assetId: string, signed: Record<string, string>): UploadParams | null {
  const fileSize = Number(signed.file_size);
  if (!isUuid(assetId) || !Number.isSafeInteger(fileSize) || fileSize <= 0 || FIXED.some((name) => signed[name] === undefined)) return null;
  const extra = Object.fromEntries(Object.entries(signed).filter(([name]) => !(FIXED as readonly string[]).includes(name)));
  const { job_id, drive_id, project_id, media_ref, content_type } = signed;
  return { asset_id: assetId.toLowerCase(), job_id, drive_id, project_id, media_ref, content_type, file_size: fileSize, extra };
}

const PART = /^bytes (\d{1,15})-(\d{1,15})\/(\d{1,15}|\*)$/i;
const QUERY = /^bytes \*\/(\d{1,15}|\*)$/i;

function parseContentRange(header: string, total: number): Part {
  const text = header.trim();
  if (!text) return { kind: 'whole' };
  const query = QUERY.exec(text);
  const part = query ? null : PART.exec(text);
  if (!query && !part) {
    throw invalidInput(
      `Content-Range ${JSON.stringify(text.slice(0, 80))} is malformed: expected bytes <first>-<last>/<total> or bytes */<total>`,
    );
  }
  const declared = (query ?? part)![query ? 1 : 3];
  if (declared !== '*' && Number(declared) !== total)
    throw invalidInput(`Content-Range total ${declared} differs from the file_size of ${total} bytes`);
  if (query) return { kind: 'query' };
  const [first, last] = [Number(part![1]), Number(part![2])];
  if (first > last || last >= total)
    throw invalidInput(`Content-Range bytes ${first}-${last} is not a range within the file_size of ${total} bytes`);
  return { kind: 'part', first, last };
}

function checkBodyHeaders(ctx: Context): void {
  const type = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
  if (type !== 'application/octet-stream') {
    throw new UnsupportedMediaType(
      `Content-Type must be application/octet-stream${type ? `, not ${type}` : ''}: send the file's raw bytes`,
    );
  }
  const coding = ctx.get('content-encoding').trim().toLowerCase();
  if (coding && coding !== 'identity')
    throw new UnsupportedMediaType(`Content-Encoding ${coding} is not supported: send the file's bytes as they are`);
}

const tooLarge = (part: Part, total: number) =>
  part.kind === 'part'
    ? new AppError('payload_too_large', `the body is longer than its Content-Range bytes ${part.first}-${part.last} declares`)
    : new AppError('payload_too_large', `the body is larger than the upload's file_size of ${total} bytes`);

/** Progress is told every 5 % of the file, or after 30 s without: at most a few dozen events per upload on the job's stream. */
const PROGRESS_STEP = 0.05;
const PROGRESS_QUIET_MS = 30_000;

/** Upload progress for the job while bytes stream in, and once when the request's part ends. */
function progressReporter(deps: UploadRouteDeps, ctx: Context, params: UploadParams, from: number) {
  let bytes = from;
  let last = { at: Date.now(), bytes: from };
  const report = (at: number) => {
    if (!deps.recordProgress) return;
    last = { at: Date.now(), bytes: at };
    deps.recordProgress(params, at).catch((err: unknown) => progressNotRecorded(logOf(deps, ctx), err, params));
  };
  return {
    add: (n: number) => {
      bytes += n;
      if (bytes - last.bytes >= PROGRESS_STEP * params.file_size || Date.now() - last.at >= PROGRESS_QUIET_MS) report(bytes);
    },
    report,
  };
}

/** A busy job stream is expected (the next report says more): a line without a stack; anything else a warning. */
function progressNotRecorded(log: Logger | undefined, err: unknown, params: UploadParams): void {
  if (err instanceof AppError && err.code === 'unavailable') {
    log?.debug({ asset_id: params.asset_id, job_id: params.job_id, reason: err.message }, 'upload progress not recorded');
  } else log?.warn({ err, asset_id: params.asset_id, job_id: params.job_id }, 'upload progress not recorded');
}

/**
 * The request body from byte `skip` on, as a stream of its own: the store destroys it on a
 * refusal, which must not destroy the request (the answer still goes out on its socket).
 */
function requestBody(req: IncomingMessage, skip: number, options: { onBytes: (n: number) => void; idleMs: number }): Readable {
  let toSkip = skip;
  const body = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      idle.refresh();
      const rest = toSkip > 0 ? chunk.subarray(Math.min(toSkip, chunk.length)) : chunk;
      toSkip -= chunk.length - rest.length;
      if (rest.length > 0) options.onBytes(rest.length);
      done(null, rest.length > 0 ? rest : undefined);
    },
  });
  // A body that stops sending holds a connection and a file: after idleMs without a byte it is
  // cut, its whole writes kept to resume from (issue 19).
  const idle = setTimeout(() => body.destroy(idleBody(options.idleMs)), options.idleMs);
  const cut = () => {
    if (!req.complete) body.destroy(invalidInput('the request body was cut off before it ended'));
  };
  req.once('aborted', cut).on('error', cut).once('close', cut);
  // The deadline is the client's: once every byte has arrived it is met, whoever reads the body.
  req.once('end', () => clearTimeout(idle));
  body.once('close', () => clearTimeout(idle));
  // A body the route never read (a refusal answered before it) has no consumer to take its
  // error: without a listener of its own, a cut would be an uncaught exception, and end the process.
  body.on('error', () => undefined);
  req.pipe(body);
  return body;
}

const idleBody = (ms: number) =>
  invalidInput(
    `no byte of the request body arrived for ${ms / 1000} s: the bytes before are kept; send the rest with Content-Range from the Range header`,
  );

function answerComplete(ctx: Context, params: UploadParams, size: number): void {
  ctx.status = 200;
  ctx.body = { asset_id: params.asset_id, size };
}

function resumeIncomplete(ctx: Context, bytes: number): void {
  ctx.body = null; // an empty body, not Koa's status text
  ctx.status = 308;
  setRange(ctx, bytes);
}

function setRange(ctx: Context, bytes: number): void {
  if (bytes > 0) ctx.set('Range', `bytes=0-${bytes - 1}`);
}

const logOf = (deps: UploadRouteDeps, ctx: Context): Logger | undefined => (ctx.state as { log?: Logger }).log ?? deps.logger;
