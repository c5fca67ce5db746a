import { Command } from 'commander';
import { registerCommands } from '../cli/commands';
import { registerMcp } from '../cli/mcp';

/**
 * `npx mps …`: the API from a terminal (cli/commands, on the SDK in sdk/) and, as `mps mcp`, an
 * MCP server on stdio for AI assistants (cli/mcp). Exit codes and output are described in README
 * "Clients".
 */
const program = new Command('mps').description('Media Project Service: the API from a terminal, and an MCP server (mps mcp)');
registerCommands(program);
registerMcp(program);
program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = process.exitCode || 1;
});
