import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { clientOf, defined, guarded, type ToolContext } from './tool-kit';
import { DEFAULT_WAIT_SECONDS, jobSummary, waitBounded, waitedSummary } from './job-wait';
import { jobId, projectId, waitSeconds } from './fields';

/** The job tools: wait for a job (bounded), list jobs, cancel a job. */

export function registerJobTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'wait_for_job',
    {
      title: 'Wait for a job',
      description:
        'Waits until a job (import, agent edit or publish) has stopped or was cancelled, for at most timeout_seconds, and returns the job with its result. ' +
        'If the time runs out first, returns the job as it is then with finished=false; call again to keep waiting.',
      inputSchema: { job_id: jobId, timeout_seconds: waitSeconds },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'wait_for_job', async ({ job_id, timeout_seconds }, extra) => {
      const waited = await waitBounded(clientOf(ctx), job_id, timeout_seconds ?? DEFAULT_WAIT_SECONDS, extra);
      return { summary: waitedSummary(job_id, waited), data: { finished: waited.finished, job: waited.job } };
    }),
  );

  server.registerTool(
    'list_jobs',
    {
      title: 'List recent jobs',
      description: "Lists the drive's recent jobs (imports, agent edits, publishes), newest first, with their state, progress and result.",
      inputSchema: {
        project_id: projectId.optional().describe('Only the jobs of this project'),
        type: z.enum(['import/project_media', 'agent', 'publish']).optional().describe('Only jobs of this type'),
        limit: z.number().int().min(1).max(100).optional().describe('How many jobs at most (default 20)'),
        cursor: z.string().min(1).max(512).optional().describe('next_cursor of a previous answer, for the next page'),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'list_jobs', async (args) => {
      const page = await clientOf(ctx).listJobs(defined(args));
      const lines = page.data.map((job) => `- ${jobSummary(job)}`);
      const more = page.pagination.next_cursor ? `\nMore: cursor ${page.pagination.next_cursor}` : '';
      return { summary: `${page.data.length} job(s).${lines.length ? `\n${lines.join('\n')}` : ''}${more}`, data: page };
    }),
  );

  server.registerTool(
    'cancel_job',
    {
      title: 'Cancel a job',
      description:
        'Cancels a queued or running job; its state becomes cancelled. A job that has already stopped cannot be cancelled (an error says so).',
      inputSchema: { job_id: jobId },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    guarded(ctx, 'cancel_job', async ({ job_id }) => {
      const client = clientOf(ctx);
      await client.cancelJob(job_id);
      const job = await client.getJob(job_id);
      return { summary: `Cancelled. ${jobSummary(job)}`, data: { job } };
    }),
  );
}
