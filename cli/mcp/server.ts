import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createClient } from '../../sdk/client';
import { loadConnection, NOT_LOGGED_IN } from './config';
import { registerDriveTools } from './drive-tools';
import { registerEditTools } from './edit-tools';
import { registerExportTools } from './export-tools';
import { registerJobTools } from './job-tools';
import type { ToolContext } from './tool-kit';

/** The server's tools over the given connection; the tools answer "run mps login" when there is none. */
export function createMcpServer(ctx: ToolContext, version: string): McpServer {
  const server = new McpServer(
    { name: 'mps', title: 'Media Project Service', version },
    {
      instructions:
        'Tools for a Media Project Service Drive: find projects (search_drive, list_projects, list_folders, get_project), ' +
        'import media from URLs, edit with the project agent, publish, export transcripts and timelines. ' +
        'import_media, prompt_agent and publish_composition start jobs: pass wait=true, or follow them with wait_for_job.',
    },
  );
  registerDriveTools(server, ctx);
  registerEditTools(server, ctx);
  registerExportTools(server, ctx);
  registerJobTools(server, ctx);
  return server;
}

/**
 * `mps mcp`: serves the tools on stdin/stdout until stdin closes. stdout is the protocol, so
 * everything else goes to stderr. Starting without a configuration is allowed: the assistant then
 * lists the tools and each call says to run `mps login`.
 */
export async function runMcpServer(version: string): Promise<void> {
  const log = (message: string) => process.stderr.write(`mps mcp: ${message}\n`);
  // An unreadable config file is the tools' answer, not a server that will not start: the assistant shows it.
  const { connection, problem } = await loadConnection().then(
    (found) => ({ connection: found, problem: undefined }),
    (err: Error) => ({ connection: null, problem: err.message }),
  );
  log(connection ? `serving on stdio, API at ${connection.baseUrl}` : (problem ?? NOT_LOGGED_IN));
  const client = connection ? createClient(connection) : null;
  const server = createMcpServer({ connection, client, problem, log }, version);
  const transport = new StdioServerTransport();
  // A client that goes away closes our stdin; a wait in progress must not keep the process alive.
  process.stdin.once('end', () => void server.close().finally(() => process.exit(0)));
  await server.connect(transport);
}
