import type { Command } from 'commander';
import { waitAndReport } from '../lib/jobs';
import { printFields, printJson } from '../lib/output';
import { action, withJson } from '../lib/run';

/** `mps agent "<prompt>"`: one turn of the project agent. */
export function registerAgent(program: Command): void {
  withJson(program.command('agent'))
    .description('prompt the project agent (edit by instruction)')
    .argument('<prompt>')
    .requiredOption('--project <id>', 'the project')
    .option('--composition <id>', 'the composition to work on')
    .option('--model <model>', 'a model of GET /agent/models (auto by default)')
    .option('--wait', 'wait for the turn and print what it did (exit 3 when it ends in error)')
    .action(
      action(async (ctx, prompt: string, opts: { project: string; composition?: string; model?: string; wait?: boolean }) => {
        const client = await ctx.client();
        const accepted = await client.agent(
          { prompt, project_id: opts.project, composition_id: opts.composition, model: opts.model },
          { signal: ctx.signal },
        );
        if (opts.wait) await waitAndReport(ctx, client, accepted.job_id);
        else if (ctx.json) printJson(accepted);
        else
          printFields([
            ['job', accepted.job_id],
            ['project', accepted.project_id],
          ]);
      }),
    );
}
