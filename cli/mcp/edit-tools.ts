import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Client } from '../../sdk/client';
import { clientOf, defined, guarded, ToolFailure, type Extra, type ToolAnswer, type ToolContext } from './tool-kit';
import { DEFAULT_WAIT_SECONDS, waitBounded, waitedSummary } from './job-wait';
import { folderPath, projectId, wait, waitSeconds } from './fields';

/** The tools that start a job: import media from URLs, prompt the project agent, publish a composition. */

const mediaItem = z.object({
  url: z.url({ protocol: /^https?$/ }).describe('A public or pre-signed http(s) URL of an audio or video file, fetched by the service'),
  name: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe("The file's name in the project, used by compositions to refer to it (default: the URL's file name)"),
  language: z.string().length(2).optional().describe('ISO 639-1 code of the spoken language, for transcription (default: detected)'),
});

export function registerEditTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'import_media',
    {
      title: 'Import media from URLs',
      description:
        'Imports audio or video files from URLs into a new project (project_name) or an existing one (project_id), transcribes them, ' +
        'and optionally creates compositions (edits) from them. Starts an import job; with wait=true returns its result.',
      inputSchema: {
        media: z.array(mediaItem).min(1).max(100).describe('The files to import'),
        project_id: projectId.optional().describe('Import into this existing project (give this or project_name)'),
        project_name: z.string().min(1).max(255).optional().describe('Create a new project with this name (give this or project_id)'),
        folder_name: folderPath.optional().describe('For a new project: the Drive folder to put it in, nested folders separated by /'),
        compositions: z
          .array(
            z.object({
              name: z.string().min(1).max(255).describe("The composition's name"),
              media: z.array(z.string().min(1)).min(1).describe('The names of the imported files to place one after another'),
            }),
          )
          .max(50)
          .optional()
          .describe('Compositions to create from the imported files'),
        wait,
        wait_timeout_seconds: waitSeconds,
      },
    },
    guarded(ctx, 'import_media', async (args, extra) => {
      const project = oneProject(args.project_id, args.project_name);
      const add_media: Record<string, { url: string; language?: string }> = {};
      for (const item of args.media) {
        const name = item.name ?? fileNameOf(item.url);
        if (Object.hasOwn(add_media, name)) throw new ToolFailure(`Two media items are named "${name}": give them distinct names.`);
        add_media[name] = defined({ url: item.url, language: item.language });
      }
      const add_compositions = args.compositions?.map((c) => ({ name: c.name, clips: c.media.map((media) => ({ media })) }));
      const client = clientOf(ctx);
      const accepted = await client.importMedia(defined({ ...project, folder_name: args.folder_name, add_media, add_compositions }));
      return started(client, accepted, `Import started into project ${accepted.project_id} (${accepted.project_url}).`, args, extra);
    }),
  );

  server.registerTool(
    'prompt_agent',
    {
      title: 'Prompt the project agent',
      description:
        'Asks the project agent to edit a project in natural language (e.g. "remove filler words", "cut silences longer than 1.5 seconds", ' +
        '"rename this composition to Intro"). Starts an agent job; with wait=true returns what the agent did. ' +
        'Pass the conversation_id of an earlier answer to continue that conversation.',
      inputSchema: {
        prompt: z.string().min(1).max(10000).describe('The instruction, in natural language'),
        project_id: projectId.optional().describe('The project to edit (give this or project_name)'),
        project_name: z
          .string()
          .min(1)
          .max(255)
          .optional()
          .describe('Create a new project with this name and work in it (give this or project_id)'),
        composition_id: z
          .string()
          .min(1)
          .max(2048)
          .optional()
          .describe('The composition to edit (needs project_id; default: the agent chooses)'),
        model: z.string().min(1).max(200).optional().describe('A model id or alias listed by get_drive_info (default auto)'),
        conversation_id: z
          .guid()
          .optional()
          .describe('Continue this conversation of the same project (from an earlier prompt_agent answer)'),
        wait,
        wait_timeout_seconds: waitSeconds,
      },
    },
    guarded(ctx, 'prompt_agent', async (args, extra) => {
      const project = oneProject(args.project_id, args.project_name);
      const client = clientOf(ctx);
      const body = {
        prompt: args.prompt,
        ...project,
        composition_id: args.composition_id,
        model: args.model,
        conversation_id: args.conversation_id,
      };
      const accepted = await client.agent(defined(body));
      const head = `Agent job started on project ${accepted.project_id} (model ${accepted.resolved_model}, conversation ${accepted.conversation_id}).`;
      return started(client, accepted, head, args, extra);
    }),
  );

  server.registerTool(
    'publish_composition',
    {
      title: 'Publish a composition',
      description:
        'Renders a composition and publishes it at a share URL (a second publish of the same composition and media type keeps the URL). ' +
        'Starts a publish job; with wait=true returns the share_url and a download_url of the render.',
      inputSchema: {
        project_id: projectId.describe('The project to publish'),
        composition_id: z.string().min(1).max(2048).optional().describe('The composition to publish (default: the first with content)'),
        media_type: z
          .enum(['Video', 'Audio'])
          .optional()
          .describe('Video or Audio (default Video; Audio when the composition has no video)'),
        resolution: z.enum(['480p', '720p', '1080p', '1440p', '4K']).optional().describe('Video resolution'),
        access_level: z
          .enum(['public', 'unlisted', 'drive', 'private'])
          .optional()
          .describe("Who can open the share URL (default: the drive's setting)"),
        wait,
        wait_timeout_seconds: waitSeconds,
      },
    },
    guarded(ctx, 'publish_composition', async ({ wait: w, wait_timeout_seconds, ...body }, extra) => {
      const client = clientOf(ctx);
      const accepted = await client.publish(defined(body));
      return started(client, accepted, `Publish started for project ${accepted.project_id}.`, { wait: w, wait_timeout_seconds }, extra);
    }),
  );
}

/** Exactly one of project_id and project_name, as the API wants it. */
function oneProject(project_id: string | undefined, project_name: string | undefined) {
  if (project_id && project_name) throw new ToolFailure('Give project_id (an existing project) or project_name (a new one), not both.');
  if (project_id) return { project_id };
  if (project_name) return { project_name };
  throw new ToolFailure('Give project_id (an existing project) or project_name (a new one).');
}

/** The last segment of the URL's path, decoded: what the file is called where it comes from. */
function fileNameOf(url: string): string {
  const segment = new URL(url).pathname.split('/').filter(Boolean).pop();
  return segment ? decodeURIComponent(segment) : new URL(url).hostname;
}

/** The job's acceptance, or, when asked to wait, the job once it stopped (or as it is when the wait runs out). */
async function started(
  client: Client,
  accepted: { job_id: string } & Record<string, unknown>,
  head: string,
  options: { wait?: boolean; wait_timeout_seconds?: number },
  extra: Extra,
): Promise<ToolAnswer> {
  if (!options.wait) return { summary: `${head} Job ${accepted.job_id}: call wait_for_job to follow it.`, data: { accepted } };
  const waited = await waitBounded(client, accepted.job_id, options.wait_timeout_seconds ?? DEFAULT_WAIT_SECONDS, extra);
  return { summary: `${head} ${waitedSummary(accepted.job_id, waited)}`, data: { accepted, finished: waited.finished, job: waited.job } };
}
