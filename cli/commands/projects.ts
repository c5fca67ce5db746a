import type { Command } from 'commander';
import { plainSnippet, printFields, printJson, printTable, stylesOnStdout } from '../lib/output';
import { action, withJson } from '../lib/run';
import { oneOf, positiveInt } from './options';

const SEARCH_TYPES = ['project', 'video', 'audio', 'image', 'project_folder', 'composition'] as const;
type SearchType = (typeof SEARCH_TYPES)[number];

/** `mps projects list|get` and `mps search`. */
export function registerProjects(program: Command): void {
  const projects = program.command('projects').description('list and read projects');

  withJson(projects.command('list'))
    .description('projects, the newest first')
    .option('--name <text>', 'only projects whose name contains this (any case)')
    .option('--limit <n>', 'at most this many', positiveInt)
    .action(
      action(async (ctx, opts: { name?: string; limit?: number }) => {
        const page = await (await ctx.client()).listProjects({ name: opts.name, limit: opts.limit });
        if (ctx.json) return printJson(page);
        printTable(
          ['PROJECT', 'NAME', 'UPDATED', 'FOLDER'],
          page.data.map((p) => [p.id, p.name, p.updated_at, p.folder_path ?? '']),
          'no projects',
        );
      }),
    );

  withJson(projects.command('get'))
    .description('one project: its media, compositions and publishes')
    .argument('<project-id>')
    .action(
      action(async (ctx, projectId: string) => {
        const p = await (await ctx.client()).getProject(projectId);
        if (ctx.json) return printJson(p);
        printFields([
          ['project', p.id],
          ['name', p.name],
          ['folder', p.folder_path],
          ['created', p.created_at],
          ['updated', p.updated_at],
        ]);
        const media = Object.entries(p.media_files);
        if (media.length)
          printTable(
            ['MEDIA', 'TYPE', 'SECONDS'],
            media.map(([ref, m]) => [ref, m.type, m.duration?.toFixed(1) ?? '']),
            '',
          );
        if (p.compositions.length)
          printTable(
            ['COMPOSITION', 'NAME', 'SECONDS', 'TYPE'],
            p.compositions.map((c) => [c.id, c.name, c.duration.toFixed(1), c.media_type]),
            '',
          );
      }),
    );

  withJson(program.command('search'))
    .description('search the drive: projects, media, folders, compositions, by name and content')
    .argument('<query>')
    .option('--type <types>', `comma-separated: ${SEARCH_TYPES.join(', ')}`, commaTypes)
    .option('--limit <n>', 'at most this many', positiveInt)
    .action(
      action(async (ctx, query: string, opts: { type?: SearchType[]; limit?: number }) => {
        const found = await (await ctx.client()).search({ query, type: opts.type, limit: opts.limit });
        if (ctx.json) return printJson(found);
        // Last, so that its terminal styles never upset the alignment.
        const bold = stylesOnStdout();
        printTable(
          ['TYPE', 'NAME', 'PROJECT', 'COMPOSITION', 'MATCH'],
          found.results.map((r) => [
            r.type,
            r.name ?? r.path ?? '',
            r.project_id ?? '',
            r.composition_id ?? '',
            { safe: r.snippet ? plainSnippet(r.snippet, bold) : '' },
          ]),
          'nothing found',
        );
      }),
    );
}

function commaTypes(raw: string): SearchType[] {
  return raw.split(',').map((t) => oneOf(SEARCH_TYPES)(t.trim()) as SearchType);
}
