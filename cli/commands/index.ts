import type { Command } from 'commander';
import { registerAgent } from './agent';
import { registerAuth } from './auth';
import { registerExport } from './export';
import { registerImport } from './import';
import { registerJobs } from './jobs';
import { registerProjects } from './projects';
import { registerPublish } from './publish';

/**
 * The CLI's commands (issue 23 item 3), one file per group, each on the SDK in sdk/. Exit codes
 * are cli/lib/exit.ts's and README "Clients: the CLI"'s.
 */
export function registerCommands(program: Command): void {
  registerAuth(program);
  registerImport(program);
  registerJobs(program);
  registerProjects(program);
  registerAgent(program);
  registerPublish(program);
  registerExport(program);
}
