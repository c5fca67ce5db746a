import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { FileAnswer } from '../../sdk/client';
import { formatBytes, note, printJson } from '../lib/output';
import { action, withJson } from '../lib/run';
import { oneOf } from './options';

const TRANSCRIPT_FORMATS = ['txt', 'markdown', 'html', 'rtf', 'docx', 'srt'] as const;
const TIMELINE_FORMATS = ['fcpxml', 'edl', 'otio'] as const;

type ExportOptions = { project: string; format: string; composition?: string; output: string; withMedia?: boolean };

/** `mps export transcript|timeline … -o FILE`. */
export function registerExport(program: Command): void {
  const exports = program.command('export').description('export a transcript or a timeline to a file');

  withJson(exports.command('transcript'))
    .description(`a composition's transcript: ${TRANSCRIPT_FORMATS.join(', ')}`)
    .requiredOption('--project <id>', 'the project')
    .requiredOption('--format <format>', TRANSCRIPT_FORMATS.join(', '), oneOf(TRANSCRIPT_FORMATS))
    .option('--composition <id>', 'the composition (the first one by default)')
    .requiredOption('-o, --output <file>', 'where to write it (- for stdout)')
    .action(
      action(async (ctx, opts: ExportOptions) => {
        const client = await ctx.client();
        const file = await client.exportTranscript({
          project_id: opts.project,
          format: opts.format as (typeof TRANSCRIPT_FORMATS)[number],
          composition_id: opts.composition,
        });
        await save(ctx.json, file, opts.output);
      }),
    );

  withJson(exports.command('timeline'))
    .description(`a composition's timeline for an editor: ${TIMELINE_FORMATS.join(', ')}`)
    .requiredOption('--project <id>', 'the project')
    .requiredOption('--format <format>', TIMELINE_FORMATS.join(', '), oneOf(TIMELINE_FORMATS))
    .option('--composition <id>', 'the composition (the first one by default)')
    .option('--with-media', 'a zip with the media files beside the timeline')
    .requiredOption('-o, --output <file>', 'where to write it (- for stdout)')
    .action(
      action(async (ctx, opts: ExportOptions) => {
        const client = await ctx.client();
        const file = await client.exportTimeline(
          { project_id: opts.project, format: opts.format as (typeof TIMELINE_FORMATS)[number], composition_id: opts.composition },
          opts.withMedia ? { with_media: true } : {},
        );
        await save(ctx.json, file, opts.output);
      }),
    );
}

/** `-o -` is stdout, as with other CLIs: what was written is then said on stderr, even with --json. */
async function save(json: boolean, file: FileAnswer, output: string): Promise<void> {
  if (output === '-') {
    await new Promise<void>((resolve, reject) => process.stdout.write(file.bytes, (err) => (err ? reject(err) : resolve())));
    note(`wrote ${formatBytes(file.bytes.length)} to stdout (${file.contentType})`);
    return;
  }
  await writeFile(output, file.bytes);
  const written = { file: output, bytes: file.bytes.length, content_type: file.contentType, file_name: file.fileName };
  if (json) printJson(written);
  else note(`wrote ${output} (${formatBytes(file.bytes.length)}, ${file.contentType})`);
}
