import type { Command } from 'commander';

/** `mps mcp`: the MCP server on stdio (issue 23 item 4; README "Clients: the MCP server"). */
export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description(
      'Serve the API as MCP tools on stdin/stdout, for AI assistants (configuration: MPS_BASE_URL and MPS_TOKEN, else `mps login`)',
    )
    // Loaded only for `mps mcp`: the MCP SDK and zod cost the other commands ~0.2 s at start.
    .action(async () => (await import('./server.js')).runMcpServer(VERSION));
}

// The protocol's server version; the cli package's own.
const VERSION = '0.1.0';
