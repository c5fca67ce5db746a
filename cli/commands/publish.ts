import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { boundedFetch, DEFAULT_TIMEOUTS } from '../../sdk/timeout';
import { clientTimeouts } from '../lib/config';
import { CliError, Exit } from '../lib/exit';
import { waitAndReport } from '../lib/jobs';
import { formatBytes, note, printFields, printJson } from '../lib/output';
import { byteProgress } from '../lib/progress';
import { action, withJson } from '../lib/run';
import { oneOf } from './options';

type PublishOptions = {
  project: string;
  composition?: string;
  mediaType?: 'Video' | 'Audio';
  resolution?: '480p' | '720p' | '1080p' | '1440p' | '4K';
  accessLevel?: 'public' | 'unlisted' | 'drive' | 'private';
  wait?: boolean;
  download?: string;
};

/** `mps publish`: render a composition and give it a share page; --download fetches the render. */
export function registerPublish(program: Command): void {
  withJson(program.command('publish'))
    .description('publish a composition: render it and give it a share page')
    .requiredOption('--project <id>', 'the project')
    .option('--composition <id>', 'the composition (the first one by default)')
    .option('--media-type <type>', 'Video or Audio', oneOf(['Video', 'Audio']))
    .option('--resolution <r>', '480p, 720p, 1080p, 1440p or 4K', oneOf(['480p', '720p', '1080p', '1440p', '4K']))
    .option('--access-level <level>', 'public, unlisted, drive or private', oneOf(['public', 'unlisted', 'drive', 'private']))
    .option('--wait', 'wait for the render (exit 3 when it ends in error)')
    .option('--download <file>', 'wait, then download the render to this file')
    .action(
      action(async (ctx, opts: PublishOptions) => {
        // A render is minutes of work: a download that cannot be written is found out before it.
        if (opts.download) await checkFolder(opts.download);
        const client = await ctx.client();
        const accepted = await client.publish(
          {
            project_id: opts.project,
            composition_id: opts.composition,
            media_type: opts.mediaType,
            resolution: opts.resolution,
            access_level: opts.accessLevel,
          },
          { signal: ctx.signal },
        );
        if (!opts.wait && !opts.download) {
          if (ctx.json) printJson(accepted);
          else
            printFields([
              ['job', accepted.job_id],
              ['project', accepted.project_id],
            ]);
          return;
        }
        const job = await waitAndReport(ctx, client, accepted.job_id);
        if (!opts.download) return;
        const url = job.result?.download_url;
        if (!url) throw new CliError(Exit.jobFailed, `job ${job.job_id} has no download_url to download`);
        await download(url, opts.download, ctx.signal);
        if (!ctx.json) note(`downloaded to ${opts.download}`);
      }),
    );
}

async function checkFolder(file: string): Promise<void> {
  const folder = dirname(file);
  const found = await stat(folder).catch(() => null);
  if (!found?.isDirectory()) throw new CliError(Exit.usage, `--download: the folder ${folder} does not exist`);
}

/**
 * The render to `file` with a progress bar by bytes: written beside it and renamed at the end, so
 * an interrupted download never leaves a truncated file under the name asked for.
 */
async function download(url: string, file: string, signal: AbortSignal): Promise<void> {
  // Bounded as the SDK's requests are: a download server that never answers fails as unreachable.
  const timeoutMs = clientTimeouts().timeoutMs ?? DEFAULT_TIMEOUTS.responseMs;
  const response = await boundedFetch(fetch, timeoutMs)(url, { signal });
  if (!response.ok || !response.body) throw new CliError(Exit.refused, `the download answered ${response.status}: ${url}`);
  const total = Number(response.headers.get('content-length') ?? 0);
  const bar = await byteProgress('download');
  let received = 0;
  const counting = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (total > 0) bar.update(received, total);
      done(null, chunk);
    },
  });
  const partial = `${file}.part`;
  try {
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), counting, createWriteStream(partial), {
      signal,
    });
    await rename(partial, file);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  } finally {
    bar.stop();
  }
  if (total > 0 && received !== total)
    throw new CliError(Exit.unavailable, `the download ended at ${formatBytes(received)} of ${formatBytes(total)}`);
}
