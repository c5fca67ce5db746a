import type { Command } from 'commander';
import { failUnlessSucceeded, jobLine, printJob } from '../lib/jobs';
import { note, printJson, printTable, visible } from '../lib/output';
import { action, withJson } from '../lib/run';
import { oneOf, positiveInt } from './options';

const JOB_TYPES = ['import/project_media', 'agent', 'publish'] as const;
type JobType = (typeof JOB_TYPES)[number];

/** `mps jobs list|get|cancel|watch`. */
export function registerJobs(program: Command): void {
  const jobs = program.command('jobs').description('list, read, cancel and watch jobs');

  withJson(jobs.command('list'))
    .description('the newest jobs first')
    .option('--project <id>', 'only this project')
    .option('--type <type>', `only this type: ${JOB_TYPES.join(', ')}`, oneOf(JOB_TYPES))
    .option('--limit <n>', 'at most this many', positiveInt)
    .action(
      action(async (ctx, opts: { project?: string; type?: JobType; limit?: number }) => {
        const page = await (await ctx.client()).listJobs({ project_id: opts.project, type: opts.type, limit: opts.limit });
        if (ctx.json) return printJson(page);
        printTable(
          ['JOB', 'TYPE', 'STATE', 'CREATED', 'PROJECT'],
          page.data.map((j) => [j.job_id, j.job_type, jobLine(j), j.created_at, j.project_id]),
          'no jobs',
        );
      }),
    );

  withJson(jobs.command('get'))
    .description('one job: state, progress, result')
    .argument('<job-id>')
    .action(
      action(async (ctx, jobId: string) => {
        const job = await (await ctx.client()).getJob(jobId);
        if (ctx.json) printJson(job);
        else printJob(job);
      }),
    );

  withJson(jobs.command('cancel'))
    .description('cancel a queued or running job (a stopped one is refused: 409)')
    .argument('<job-id>')
    .action(
      action(async (ctx, jobId: string) => {
        await (await ctx.client()).cancelJob(jobId);
        if (ctx.json) printJson({ job_id: jobId, cancelled: true });
        else note(`cancelled ${jobId}`);
      }),
    );

  withJson(jobs.command('watch'))
    .description('follow a job live until it ends: each state and progress change (exit 3 when it ends in error or cancelled)')
    .argument('<job-id>')
    .action(
      action(async (ctx, jobId: string) => {
        const client = await ctx.client();
        // One line per change on stdout (NDJSON with --json): watching is this command's answer.
        const job = await client.waitForJob(jobId, {
          signal: ctx.signal,
          onUpdate: (j) => process.stdout.write(ctx.json ? `${JSON.stringify(j)}\n` : `${visible(jobLine(j))}\n`),
        });
        failUnlessSucceeded(job);
      }),
    );
}
