import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { projectId } from './fields';
import { clientOf, defined, guarded, type ToolContext } from './tool-kit';

/** The export tools: a composition's transcript and its timeline, returned as text. */

const compositionId = z.string().min(1).max(100).optional().describe('The composition (default: the first composition of the project)');

export function registerExportTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'export_transcript',
    {
      title: 'Export a transcript',
      description:
        "Exports a composition's transcript as txt, markdown, html, rtf or srt (SubRip captions) and returns the text. " +
        'docx is binary: the answer then gives only its file name and size (use the CLI, `mps export transcript`, to save it).',
      inputSchema: {
        project_id: projectId,
        format: z.enum(['txt', 'markdown', 'html', 'rtf', 'docx', 'srt']).optional().describe('The file format (default txt)'),
        composition_id: compositionId,
        include_speaker_labels: z
          .enum(['off', 'changes', 'every_paragraph'])
          .optional()
          .describe('Speaker labels: off, when the speaker changes, or on every paragraph'),
        include_markers: z.boolean().optional().describe("Include the composition's markers"),
        timecodes: z
          .object({
            frequency_seconds: z.number().min(1).max(86400).optional().describe('A timecode every this many seconds'),
            on_paragraphs: z.boolean().optional().describe('A timecode at each paragraph'),
            on_speakers: z.boolean().optional().describe('A timecode at each change of speaker'),
            on_markers: z.boolean().optional().describe('A timecode at each marker'),
            offset_seconds: z.number().min(0).max(360000).optional().describe('Added to every timecode (e.g. 3600 to start at 01:00:00)'),
          })
          .optional()
          .describe('Include timecodes in the text; give at least one of frequency_seconds, on_paragraphs, on_speakers, on_markers'),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'export_transcript', async (args) => {
      const format = args.format ?? 'txt';
      const file = await clientOf(ctx).exportTranscript(defined({ ...args, format }));
      const head = { format, file_name: file.fileName, content_type: file.contentType, size_bytes: file.bytes.byteLength };
      if (format === 'docx') {
        return {
          summary: `A docx file, ${file.fileName ?? 'transcript.docx'}, of ${file.bytes.byteLength} bytes (binary, not shown).`,
          data: head,
        };
      }
      const text = new TextDecoder().decode(file.bytes);
      return { summary: `Transcript (${format}, ${file.bytes.byteLength} bytes):\n${text}`, data: { ...head, text } };
    }),
  );

  server.registerTool(
    'export_timeline',
    {
      title: 'Export a timeline',
      description:
        "Exports a composition's timeline for another editor and returns the file's text: fcpxml (Final Cut Pro, DaVinci Resolve), " +
        'edl (CMX 3600, for Premiere and Avid) or otio (OpenTimelineIO).',
      inputSchema: {
        project_id: projectId,
        format: z.enum(['fcpxml', 'edl', 'otio']).describe('The timeline format'),
        composition_id: compositionId,
      },
      annotations: { readOnlyHint: true },
    },
    guarded(ctx, 'export_timeline', async (args) => {
      const file = await clientOf(ctx).exportTimeline(defined(args));
      const text = new TextDecoder().decode(file.bytes);
      const data = {
        format: args.format,
        file_name: file.fileName,
        content_type: file.contentType,
        size_bytes: file.bytes.byteLength,
        text,
      };
      return { summary: `Timeline (${args.format}, ${file.fileName ?? 'no file name'}, ${file.bytes.byteLength} bytes):\n${text}`, data };
    }),
  );
}
