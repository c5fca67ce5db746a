import type { Command } from 'commander';

/** The CLI's commands (issue 23 item 3): login, status, import, jobs, projects, search, agent, publish, export. */
export function registerCommands(_program: Command): void {
  // Being built (issue 23 item 3).
}
