import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { Client } from '../../sdk/client';
import { ApiError } from '../../sdk/errors';
import { CliError, Exit, isAbort } from '../lib/exit';
import { followJob, type FollowedJob } from '../lib/jobs';
import { formatBytes, note, printFields, printJson } from '../lib/output';
import { byteProgress } from '../lib/progress';
import {
  commandKey,
  findRecord,
  identify,
  removeRecord,
  saveRecord,
  type CommandItem,
  type ImportRecord,
  type LocalFileInfo,
} from '../lib/resume';
import { action, withJson, type Context } from '../lib/run';
import { positiveInt } from './options';

type ImportOptions = { project?: string; name?: string; composition?: string; wait?: boolean; partSize?: number };
type LocalFile = { path: string; size: number; ref: string; contentType: string };
type Upload = { file: LocalFile; url: string };
/** Each item's media ref in the command's order (the composition's), with what it is. */
type Items = { refs: string[]; urls: Map<string, string>; files: LocalFile[]; command: CommandItem[] };
/**
 * The job being imported into; whether this run picked up an earlier one's (its uploads may hold
 * bytes); whether the API's answer was printed already (--json without --wait).
 */
type Started = { jobId: string; uploads: Upload[]; resumed: boolean; printed: boolean };

/** `mps import <url-or-file…>`: URLs as URL items, local files uploaded in resumable parts. */
export function registerImport(program: Command): void {
  withJson(program.command('import'))
    .description('import media into a project: URLs are fetched by the service, local files are uploaded (resumable after Ctrl-C)')
    .argument('<items...>', 'http(s) URLs and local files')
    .option('--project <id>', 'add to this project')
    .option('--name <name>', 'create a project of this name (the first item name by default)')
    .option('--composition <name>', 'also create a composition of this name with every item, in order')
    .option('--wait', 'wait for the import job to finish (exit 3 when it ends in error)')
    .option('--part-size <bytes>', 'bytes per upload part (MPS_PART_SIZE; without either, each file goes in one streamed PUT)', positiveInt)
    .action(
      action(async (ctx, items: string[], opts: ImportOptions) => {
        // Everything that can be wrong with the command is checked before anything is created.
        if (opts.project && opts.name) throw new CliError(Exit.usage, '--project and --name: give one of them');
        const partSize = opts.partSize ?? envPartSize();
        const sorted = await sortItems(items);
        const session = await ctx.session();
        const client = await ctx.client();
        const key = commandKey({
          baseUrl: session.baseUrl,
          items: sorted.command,
          project: opts.project,
          name: opts.name,
          composition: opts.composition,
        });
        const { jobId, uploads, resumed, printed } = await startOrResume(ctx, client, key, sorted, opts);
        // With --wait the job is followed from the first bytes of its upload on (opening its event
        // stream before them would only delay them), so its stop is seen as it happens.
        let following: FollowedJob | undefined;
        const follow = () => (opts.wait ? (following ??= followJob(ctx, client, jobId)) : undefined);
        try {
          // A new job's upload URLs hold nothing yet; a resumed one's each ask the server what it holds
          // (a finished one answers 200 at once).
          for (const upload of uploads) await uploadOne(ctx, client, upload, { key, jobId }, { partSize, fresh: !resumed }, follow);
        } catch (err) {
          following?.cancel();
          throw err;
        }
        await removeRecord(key);
        const followed = follow();
        if (followed) await followed.report();
        else if (!printed) {
          // A resumed job is read again.
          const job = await client.getJob(jobId);
          if (ctx.json) printJson(job);
          else
            printFields([
              ['job', job.job_id],
              ['project', job.project_id],
              ['state', job.job_state],
            ]);
        }
      }),
    );
}

/**
 * URLs stay URLs; anything else must be a regular, readable, non-empty local file. Each gets a
 * unique media name; `command` is what the resume record's fingerprint is made of.
 */
async function sortItems(items: string[]): Promise<Items> {
  const taken = new Set<string>();
  const unique = (name: string) => {
    let candidate = name;
    for (let i = 2; taken.has(candidate); i += 1) candidate = `${basename(name, extname(name))}-${i}${extname(name)}`;
    taken.add(candidate);
    return candidate;
  };
  const sorted: Items = { refs: [], urls: new Map(), files: [], command: [] };
  for (const item of items) {
    if (/^https?:\/\//i.test(item)) {
      const ref = unique(decodeURIComponent(new URL(item).pathname.split('/').filter(Boolean).pop() ?? '') || 'media');
      sorted.refs.push(ref);
      sorted.urls.set(ref, item);
      sorted.command.push({ url: item });
      continue;
    }
    const file = await checkedFile(item);
    const ref = unique(basename(file.path));
    sorted.refs.push(ref);
    sorted.files.push({ path: file.path, size: file.size, ref, contentType: contentTypeOf(file.path) });
    sorted.command.push({ file: file.path, size: file.size, mtime_ms: file.mtimeMs });
  }
  return sorted;
}

async function checkedFile(item: string): Promise<LocalFileInfo> {
  const file = await identify(item).catch(() => {
    throw new CliError(Exit.usage, `${item}: no such file (give a local file or an http(s) URL)`);
  });
  if (!file.isFile) throw new CliError(Exit.usage, `${item}: not a regular file (a directory? give the files in it)`);
  await access(file.path, constants.R_OK).catch(() => {
    throw new CliError(Exit.usage, `${item}: cannot be read (permissions?)`);
  });
  if (file.size === 0) throw new CliError(Exit.usage, `${item}: the file is empty`);
  return file;
}

/**
 * The job of this very command: the one an earlier run of it started and left unfinished, else a
 * new one. The record (with the POST's Idempotency-Key) is written before the POST, so a run cut
 * off during it sends the same key again and the server answers the first job, creating nothing.
 */
async function startOrResume(ctx: Context, client: Client, key: string, items: Items, opts: ImportOptions): Promise<Started> {
  let record = await findRecord(key);
  if (record?.job_id) {
    const resumed = await resumeJob(client, record, items.files);
    if (resumed) {
      note(`resuming the upload of job ${resumed.jobId}`);
      return resumed;
    }
    await removeRecord(key);
    record = undefined;
  }
  const sent = record ?? { idempotency_key: randomUUID(), created_at: new Date().toISOString() };
  if (!record) await saveRecord(key, sent);
  else note('sending the import again with the Idempotency-Key of the interrupted run');
  const accepted = await postImport(ctx, client, key, sent.idempotency_key, items, opts);
  const uploads = items.files.map((file) => ({ file, url: accepted.upload_urls?.[file.ref]?.upload_url ?? '' }));
  await saveRecord(key, {
    ...sent,
    job_id: accepted.job_id,
    project_id: accepted.project_id,
    upload_urls: Object.fromEntries(uploads.map((u) => [u.file.ref, u.url])),
  });
  const printed = ctx.json && !opts.wait;
  if (printed) printJson(accepted);
  else if (!ctx.json) note(`job ${accepted.job_id} (project ${accepted.project_id})`);
  // A POST sent again may have been answered by the first job, whose uploads may hold bytes.
  return { jobId: accepted.job_id, uploads, resumed: record !== undefined, printed };
}

/** The record's job with its upload URLs, or null when the job is gone or over (the record is then stale). */
async function resumeJob(client: Client, record: ImportRecord, files: LocalFile[]): Promise<Started | null> {
  const urls = record.upload_urls ?? {};
  if (files.some((f) => !urls[f.ref])) return null;
  const job = await client.getJob(record.job_id!).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  });
  if (!job || job.job_state === 'stopped' || job.job_state === 'cancelled') return null;
  return { jobId: job.job_id, uploads: files.map((file) => ({ file, url: urls[file.ref] })), resumed: true, printed: false };
}

async function postImport(ctx: Context, client: Client, key: string, idempotencyKey: string, items: Items, opts: ImportOptions) {
  const files = new Map(items.files.map((f) => [f.ref, f]));
  const addMedia: Record<string, { url?: string; content_type?: string; file_size?: number }> = {};
  for (const ref of items.refs) {
    const file = files.get(ref);
    addMedia[ref] = file ? { content_type: file.contentType, file_size: file.size } : { url: items.urls.get(ref) };
  }
  const refs = items.refs;
  try {
    return await client.importMedia(
      {
        ...(opts.project ? { project_id: opts.project } : { project_name: opts.name ?? refs[0] }),
        add_media: addMedia,
        ...(opts.composition ? { add_compositions: [{ name: opts.composition, clips: refs.map((media) => ({ media })) }] } : {}),
      },
      { signal: ctx.signal, idempotencyKey },
    );
  } catch (err) {
    if (isAbort(err) || ctx.signal.aborted) {
      throw new CliError(Exit.interrupted, 'interrupted: run the same command again to resume (the import is not created twice)');
    }
    // A refusal created nothing and frees the key (README "Idempotency-Key"): nothing to resume.
    if (err instanceof ApiError && err.status < 500 && err.state !== 'in_flight') await removeRecord(key);
    throw err;
  }
}

async function uploadOne(
  ctx: Context,
  client: Client,
  upload: Upload,
  of: { key: string; jobId: string },
  how: { partSize: number | undefined; fresh: boolean },
  onBytes: () => void,
): Promise<void> {
  const bar = await byteProgress(upload.file.ref);
  try {
    await client.uploadFile(upload.file.path, upload.url, {
      ...how,
      signal: ctx.signal,
      onProgress: (sent, total) => {
        bar.update(sent, total);
        if (sent > 0) onBytes();
      },
    });
  } catch (err) {
    if (isAbort(err) || ctx.signal.aborted) {
      throw new CliError(
        Exit.interrupted,
        `interrupted: run the same command again to resume the upload of ${upload.file.ref} (job ${of.jobId})`,
      );
    }
    throw await uploadRefusal(err, upload, of);
  } finally {
    bar.stop();
  }
  if (!ctx.json) note(`uploaded ${upload.file.ref} (${formatBytes(upload.file.size)})`);
}

/**
 * What an upload's failure means for the command. An upload URL that is gone or expired (404,
 * 403, 410) will fail the same way forever, and a cancelled job takes no more bytes: either way
 * the record can resume nothing and is dropped, so the same command starts a new import.
 */
async function uploadRefusal(err: unknown, upload: Upload, of: { key: string; jobId: string }): Promise<unknown> {
  if (!(err instanceof ApiError)) return err;
  if (err.status === 409 && err.state === 'cancelled') {
    await removeRecord(of.key);
    return new CliError(Exit.jobFailed, `job ${of.jobId} was cancelled`);
  }
  // The job started without this file (it waited no longer): the same command can only fail again.
  if (err.status === 409 && (err.state === 'running' || err.state === 'stopped')) {
    await removeRecord(of.key);
    return err;
  }
  if (err.status === 404 || err.status === 403 || err.status === 410) {
    await removeRecord(of.key);
    return new CliError(
      Exit.refused,
      `the upload URL of ${upload.file.ref} (job ${of.jobId}) is no longer valid (${err.status}: ${err.message}); ` +
        'run the same command again to start a new import',
    );
  }
  return err;
}

function envPartSize(): number | undefined {
  const raw = process.env.MPS_PART_SIZE;
  if (!raw) return undefined;
  try {
    return positiveInt(raw);
  } catch (err) {
    throw new CliError(Exit.usage, `MPS_PART_SIZE: ${(err as InvalidArgumentError).message}`);
  }
}

const CONTENT_TYPES = new Map([
  ['.wav', 'audio/wav'],
  ['.mp3', 'audio/mpeg'],
  ['.m4a', 'audio/mp4'],
  ['.aac', 'audio/aac'],
  ['.flac', 'audio/flac'],
  ['.ogg', 'audio/ogg'],
  ['.mp4', 'video/mp4'],
  ['.m4v', 'video/mp4'],
  ['.mov', 'video/quicktime'],
  ['.webm', 'video/webm'],
  ['.mkv', 'video/x-matroska'],
  ['.png', 'image/png'],
  ['.jpg', 'image/jpeg'],
  ['.jpeg', 'image/jpeg'],
  ['.gif', 'image/gif'],
]);

/** The upload's declared type, by extension: the service probes the bytes anyway. */
function contentTypeOf(path: string): string {
  return CONTENT_TYPES.get(extname(path).toLowerCase()) ?? 'application/octet-stream';
}
