import { basename, extname } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { Client } from '../../sdk/client';
import { ApiError } from '../../sdk/errors';
import { CliError, Exit, isAbort } from '../lib/exit';
import { followJob, type FollowedJob } from '../lib/jobs';
import { formatBytes, note, printFields, printJson } from '../lib/output';
import { byteProgress } from '../lib/progress';
import { findRecord, identify, removeRecord, saveRecords, type FileIdentity, type UploadRecord } from '../lib/resume';
import { action, withJson, type Context } from '../lib/run';
import { positiveInt } from './options';

type ImportOptions = { project?: string; name?: string; composition?: string; wait?: boolean; partSize?: number };
type LocalFile = FileIdentity & { ref: string; contentType: string };
type Upload = { file: LocalFile; url: string };

/** `mps import <url-or-file…>`: URLs as URL items, local files uploaded in resumable parts. */
export function registerImport(program: Command): void {
  withJson(program.command('import'))
    .description('import media into a project: URLs are fetched by the service, local files are uploaded (resumable after Ctrl-C)')
    .argument('<items...>', 'http(s) URLs and local files')
    .option('--project <id>', 'add to this project')
    .option('--name <name>', 'create a project of this name (the first item name by default)')
    .option('--composition <name>', 'also create a composition of this name with every item, in order')
    .option('--wait', 'wait for the import job to finish (exit 3 when it ends in error)')
    .option('--part-size <bytes>', 'bytes per upload part (MPS_PART_SIZE, else 8 MiB)', positiveInt)
    .action(
      action(async (ctx, items: string[], opts: ImportOptions) => {
        if (opts.project && opts.name) throw new CliError(Exit.usage, '--project and --name: give one of them');
        const { urls, files } = await sortItems(items);
        const client = await ctx.client();
        const resumed = await resumableJob(client, files);
        const { jobId, uploads } = resumed ?? (await startImport(ctx, client, urls, files, opts));
        if (resumed) note(`resuming the upload of job ${jobId}`);
        const partSize = opts.partSize ?? envPartSize();
        // With --wait the job is followed from the first bytes of its upload on (opening its event
        // stream before them would only delay them), so its stop is seen as it happens.
        let following: FollowedJob | undefined;
        const follow = () => (opts.wait ? (following ??= followJob(ctx, client, jobId)) : undefined);
        try {
          // A new job's upload URLs hold nothing yet; a resumed one asks the server where it stopped.
          for (const upload of uploads) await uploadOne(ctx, client, upload, jobId, { partSize, fresh: !resumed }, follow);
        } catch (err) {
          following?.cancel();
          throw err;
        }
        const followed = follow();
        if (followed) await followed.report();
        else if (!ctx.json || resumed) {
          // The API's answer was printed already with --json; a resumed job is read again.
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

/** URLs stay URLs; anything else must be a readable local file. Each gets a unique media name. */
async function sortItems(items: string[]): Promise<{ urls: Map<string, string>; files: LocalFile[] }> {
  const taken = new Set<string>();
  const unique = (name: string) => {
    let candidate = name;
    for (let i = 2; taken.has(candidate); i += 1) candidate = `${basename(name, extname(name))}-${i}${extname(name)}`;
    taken.add(candidate);
    return candidate;
  };
  const urls = new Map<string, string>();
  const files: LocalFile[] = [];
  for (const item of items) {
    if (/^https?:\/\//i.test(item)) {
      const last = decodeURIComponent(new URL(item).pathname.split('/').filter(Boolean).pop() ?? '') || 'media';
      urls.set(unique(last), item);
      continue;
    }
    const identity = await identify(item).catch(() => {
      throw new CliError(Exit.usage, `${item}: no such file (give a local file or an http(s) URL)`);
    });
    if (identity.size === 0) throw new CliError(Exit.usage, `${item}: the file is empty`);
    files.push({ ...identity, ref: unique(basename(identity.path)), contentType: contentTypeOf(identity.path) });
  }
  return { urls, files };
}

/**
 * The job of an earlier run of the same command that was interrupted: every local file has a
 * resume record of one job, still waiting. A job that is gone or over makes its records stale.
 */
async function resumableJob(client: Client, files: LocalFile[]): Promise<{ jobId: string; uploads: Upload[] } | null> {
  if (files.length === 0) return null;
  const records = await Promise.all(files.map((f) => findRecord(f.key)));
  const jobIds = new Set(records.map((r) => r?.job_id));
  const [jobId] = jobIds;
  if (jobIds.size !== 1 || !jobId) return null;
  const job = await client.getJob(jobId).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  });
  if (!job || job.job_state === 'stopped' || job.job_state === 'cancelled') {
    for (const f of files) await removeRecord(f.key);
    return null;
  }
  return { jobId, uploads: files.map((file, i) => ({ file, url: (records[i] as UploadRecord).upload_url })) };
}

async function startImport(
  ctx: Context,
  client: Client,
  urls: Map<string, string>,
  files: LocalFile[],
  opts: ImportOptions,
): Promise<{ jobId: string; uploads: Upload[] }> {
  const addMedia: Record<string, { url?: string; content_type?: string; file_size?: number }> = {};
  for (const [ref, url] of urls) addMedia[ref] = { url };
  for (const f of files) addMedia[f.ref] = { content_type: f.contentType, file_size: f.size };
  const refs = Object.keys(addMedia);
  const accepted = await client.importMedia(
    {
      ...(opts.project ? { project_id: opts.project } : { project_name: opts.name ?? refs[0] }),
      add_media: addMedia,
      ...(opts.composition ? { add_compositions: [{ name: opts.composition, clips: refs.map((media) => ({ media })) }] } : {}),
    },
    { signal: ctx.signal },
  );
  const uploads = files.map((file) => ({ file, url: accepted.upload_urls?.[file.ref]?.upload_url ?? '' }));
  const records = new Map(
    uploads.map((u) => [u.file.key, { upload_url: u.url, job_id: accepted.job_id, project_id: accepted.project_id, ref: u.file.ref }]),
  );
  if (records.size > 0) await saveRecords(records);
  if (ctx.json && !opts.wait) printJson(accepted);
  else if (!ctx.json) note(`job ${accepted.job_id} (project ${accepted.project_id})`);
  return { jobId: accepted.job_id, uploads };
}

async function uploadOne(
  ctx: Context,
  client: Client,
  upload: Upload,
  jobId: string,
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
        `interrupted: run the same command again to resume the upload of ${upload.file.ref} (job ${jobId})`,
      );
    }
    throw err;
  } finally {
    bar.stop();
  }
  await removeRecord(upload.file.key);
  if (!ctx.json) note(`uploaded ${upload.file.ref} (${formatBytes(upload.file.size)})`);
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
