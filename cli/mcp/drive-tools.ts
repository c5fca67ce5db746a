import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Client } from '../../sdk/client';
import { folderPath, projectId } from './fields';
import { clientOf, defined, guarded, type ToolContext } from './tool-kit';

/** The reading tools: drive info, search, projects, folders. */

export function registerDriveTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'get_drive_info',
    {
      title: 'Drive info',
      description:
        'Checks the connection and token, and tells which Drive the token works in, the API version, and the agent models prompt_agent accepts.',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'get_drive_info', async () => {
      const client = clientOf(ctx);
      const [status, models] = await Promise.all([client.status(), client.agentModels()]);
      const ids = [...models.availableModels.map((m) => m.id), ...models.aliases.map((a) => a.id)];
      return {
        summary: `Drive "${status.drive_name}" (${status.drive_id}), API ${status.api_version}; agent models: ${ids.join(', ')}.`,
        data: { ...status, api_base_url: ctx.connection?.baseUrl, agent_models: models },
      };
    }),
  );

  server.registerTool(
    'search_drive',
    {
      title: 'Search the Drive',
      description: 'Searches project, folder, media and composition names, and the words spoken in transcripts, across the Drive.',
      inputSchema: {
        query: z.string().min(1).max(500).describe('Words to look for'),
        types: z
          .array(z.enum(['project', 'video', 'audio', 'image', 'project_folder', 'composition']))
          .max(6)
          .optional()
          .describe('Only results of these kinds (default: all)'),
        match: z
          .array(z.enum(['name', 'content']))
          .max(2)
          .optional()
          .describe('Match names, spoken content, or both (default both)'),
        sort: z.enum(['relevance', 'newest', 'oldest']).optional().describe('Order of the results (default relevance)'),
        limit: z.number().int().min(1).max(100).optional().describe('How many results at most (default 30)'),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'search_drive', async ({ types, ...rest }) => {
      const found = await clientOf(ctx).search(defined({ ...rest, type: types }));
      const lines = found.results.map(
        (r) => `- ${r.type} "${r.name ?? ''}"${r.project_id ? ` (project ${r.project_id})` : ''}${r.path ? ` in ${r.path}` : ''}`,
      );
      return {
        summary: `${found.results.length} result(s) for "${rest.query}".${lines.length ? `\n${lines.join('\n')}` : ''}`,
        data: found,
      };
    }),
  );

  server.registerTool(
    'list_projects',
    {
      title: 'List projects',
      description:
        "Lists the projects of the Drive, newest first unless told, optionally filtered by name or folder. Use get_project for one project's compositions, media and share URLs.",
      inputSchema: {
        name: z.string().min(1).max(255).optional().describe('Only projects whose name contains this, case-insensitive'),
        folder_path: folderPath.optional().describe('Only projects directly in this folder (nested folders separated by /)'),
        sort: z.enum(['name', 'created_at', 'updated_at', 'last_viewed_at']).optional().describe('Sort field (default created_at)'),
        direction: z.enum(['asc', 'desc']).optional().describe('Sort direction (default desc)'),
        limit: z.number().int().min(1).max(100).optional().describe('How many projects at most (default 20)'),
        cursor: z.string().min(1).max(1024).optional().describe('next_cursor of a previous answer, for the next page'),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'list_projects', async (args) => {
      const page = await clientOf(ctx).listProjects(defined(args));
      const lines = page.data.map((p) => `- ${p.name} (${p.id})${p.folder_path ? ` in ${p.folder_path}` : ''}`);
      const more = page.pagination.next_cursor ? `\nMore: cursor ${page.pagination.next_cursor}` : '';
      return { summary: `${page.data.length} project(s).${lines.length ? `\n${lines.join('\n')}` : ''}${more}`, data: page };
    }),
  );

  server.registerTool(
    'get_project',
    {
      title: 'Get a project',
      description: "A project's details: its media files, its compositions (ids, names, durations), and its published share URLs.",
      inputSchema: { project_id: projectId },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'get_project', async ({ project_id }) => {
      const project = await clientOf(ctx).getProject(project_id);
      const compositions = project.compositions.map((c) => `${c.name} (${c.id}, ${c.duration} s, ${c.media_type})`).join(', ');
      const shares = project.publishes.map((p) => p.share_url).filter(Boolean);
      const summary =
        `Project "${project.name}" (${project.id}): ${Object.keys(project.media_files).length} media file(s); ` +
        `compositions: ${compositions || 'none'}${shares.length ? `; published at ${shares.join(', ')}` : ''}.`;
      return { summary, data: project };
    }),
  );

  server.registerTool(
    'list_folders',
    {
      title: 'List folders',
      description:
        'Lists the Drive\'s folders (as nested paths like "Clients/Acme") with how many projects each holds directly. Use list_projects with folder_path to see them.',
      inputSchema: { under: folderPath.optional().describe('Only this folder and the folders inside it') },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'list_folders', async ({ under }) => {
      const { folders, complete } = await foldersOf(clientOf(ctx), under);
      const lines = folders.map((f) => `- ${f.path} (${f.projects} project(s))`);
      const note = complete ? '' : ` (from the first ${MAX_PROJECTS_READ} projects only)`;
      return { summary: `${folders.length} folder(s)${note}.${lines.length ? `\n${lines.join('\n')}` : ''}`, data: { folders, complete } };
    }),
  );
}

/** The API has no folders endpoint: folders are read from the projects' folder_path, at most this many projects. */
const MAX_PROJECTS_READ = 5000;

export type Folder = { path: string; projects: number };

/** Every folder holding a project, and each folder above one, with its count of projects directly in it, sorted by path. */
export async function foldersOf(client: Client, under?: string): Promise<{ folders: Folder[]; complete: boolean }> {
  const counts = new Map<string, number>();
  let cursor: string | undefined;
  let read = 0;
  do {
    const page = await client.listProjects(defined({ limit: 100, cursor, sort: 'created_at' as const, direction: 'asc' as const }));
    for (const project of page.data) {
      const path = project.folder_path ?? '';
      const parts = path.split('/').filter(Boolean);
      parts.forEach((_, i) => {
        const folder = parts.slice(0, i + 1).join('/');
        counts.set(folder, (counts.get(folder) ?? 0) + (i === parts.length - 1 ? 1 : 0));
      });
    }
    read += page.data.length;
    cursor = page.pagination.next_cursor;
  } while (cursor && read < MAX_PROJECTS_READ);
  const inside = (path: string) => !under || path === under || path.startsWith(`${under}/`);
  const folders = [...counts]
    .filter(([path]) => inside(path))
    .map(([path, projects]) => ({ path, projects }))
    .sort((a, b) => a.path.localeCompare(b.path));
  return { folders, complete: !cursor };
}
