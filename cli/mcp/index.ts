import type { Command } from 'commander';

/** `mps mcp`: the MCP server on stdio (issue 23 item 4). */
export function registerMcp(_program: Command): void {
  // Being built (issue 23 item 4).
}
