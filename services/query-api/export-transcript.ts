import { asciiFallback, fileStem } from '../../lib/domain/file-name';
import type Router from '@koa/router';
import { Readable } from 'node:stream';
import { docxRenderer, type DocxRenderer } from '../../lib/adapters/docx/transcript';
import { keptCompositionWords, keptCues } from '../../lib/app/composition-words';
import { chooseComposition } from '../../lib/domain/composition-ref';
import { keptTranscripts } from '../../lib/app/transcripts';
import type { Word } from '../../lib/domain/edl';
import type { Cue } from '../../lib/domain/transcript/cues';
import { transcriptBlocks, type SpeakerLabels, type TranscriptOptions } from '../../lib/domain/transcript/document';
import { renderHtml, renderMarkdown, renderRtf, renderSrt, renderTxt, type TranscriptSource } from '../../lib/domain/transcript/formats';
import type { ApiContext } from '../../lib/http/middleware';
import type { SchemaRegistry } from '../../lib/http/schemas';
import type { BlobStore } from '../../lib/ports/blob-store';
import { loadProjectView, type CompositionView, type ProjectViewDeps } from './project-view';

/**
 * `POST /v1/export/transcript`: the composition's derived transcript as a file. A read, so the
 * query API answers it (the gateway sends this POST here) after the token's writes are projected.
 */

export type ExportTranscriptRequest = {
  project_id: string;
  format: ExportFormat;
  composition_id?: string;
  include_speaker_labels?: SpeakerLabels;
  include_markers?: boolean;
  timecodes?: {
    frequency_seconds?: number;
    on_paragraphs?: boolean;
    on_speakers?: boolean;
    on_markers?: boolean;
    offset_seconds?: number;
  };
};

export type ExportFormat = 'txt' | 'markdown' | 'html' | 'rtf' | 'docx' | 'srt';

/** Each format's Content-Type and file extension. */
const FORMATS = new Map<ExportFormat, { type: string; ext: string }>([
  ['txt', { type: 'text/plain; charset=utf-8', ext: 'txt' }],
  ['markdown', { type: 'text/markdown; charset=utf-8', ext: 'md' }],
  ['html', { type: 'text/html; charset=utf-8', ext: 'html' }],
  ['rtf', { type: 'application/rtf', ext: 'rtf' }],
  ['docx', { type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', ext: 'docx' }],
  ['srt', { type: 'application/x-subrip; charset=utf-8', ext: 'srt' }],
]);

export function mountExportTranscript(
  v1: Router,
  deps: ProjectViewDeps & { blobs: BlobStore; schemas: SchemaRegistry; webUrl: string },
): void {
  // Someone exporting a transcript often takes it in a second format: its words stay parsed.
  const transcripts = keptTranscripts(deps.blobs);
  const wordsOf = keptCompositionWords(deps.blobs, transcripts);
  const renderers: Renderers = { docx: docxRenderer({ now: () => new Date() }), cuesOf: keptCues() };
  v1.post('/export/transcript', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const body = ctx.request.body;
    deps.schemas.assertBody('export-transcript-request', body);
    const request = body as ExportTranscriptRequest;
    const view = await loadProjectView(deps, auth, request.project_id);
    const composition = chooseComposition(view.compositions, request.composition_id, {
      projectId: request.project_id,
      webUrl: deps.webUrl,
      hasContent: (c) => c.clips.length > 0 && c.duration > 0,
    });
    const words = await wordsOf(view.project, composition.clips);
    const format = FORMATS.get(request.format)!;
    ctx.status = 200;
    const stem = fileStem(composition.name, 'transcript');
    ctx.attachment(`${stem}.${format.ext}`, { fallback: `${asciiFallback(stem)}.${format.ext}` });
    ctx.type = format.type;
    ctx.set('X-Composition-Id', composition.id);
    ctx.set('Cache-Control', 'private, no-store');
    ctx.body = await rendered(request, composition, words, renderers);
  });
}

/** What the formats that keep something between requests are made with: the Word document's renderer, the words' cues. */
type Renderers = { readonly docx: DocxRenderer; readonly cuesOf: (words: readonly Word[], labels: SpeakerLabels) => Iterable<Cue> };

/** The text formats stream as they are rendered; a Word document (a zip) is whole before it goes. */
function rendered(
  request: ExportTranscriptRequest,
  composition: CompositionView,
  words: readonly Word[],
  renderers: Renderers,
): Readable | Promise<Buffer> {
  const options = optionsOf(request);
  if (request.format === 'srt')
    return streamed(renderSrt(renderers.cuesOf(words, options.speakerLabels), options.timecodes?.offsetSeconds ?? 0));
  const source: TranscriptSource = { title: composition.name, blocks: transcriptBlocks(words, composition.markers, options) };
  switch (request.format) {
    case 'txt':
      return streamed(renderTxt(source));
    case 'markdown':
      return streamed(renderMarkdown(source));
    case 'html':
      return streamed(renderHtml(source));
    case 'rtf':
      return streamed(renderRtf(source));
    case 'docx':
      return renderers.docx(source);
    default: {
      const never: never = request.format;
      return never;
    }
  }
}

/**
 * Pieces gathered into chunks of 64 KiB: a write per paragraph or cue would cost a syscall each,
 * and each chunk costs the stream's machinery a turn (an hour is 55–80 KiB in the text formats).
 */
function streamed(pieces: Iterable<string>): Readable {
  return Readable.from(chunked(pieces), { objectMode: false });
}

function* chunked(pieces: Iterable<string>, size = 64 * 1024): Generator<string> {
  let chunk = '';
  for (const piece of pieces) {
    chunk += piece;
    if (chunk.length >= size) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

/** The request's options with their defaults: labels where the speaker changes, no markers, no timecodes. */
export function optionsOf(request: ExportTranscriptRequest): TranscriptOptions {
  const tc = request.timecodes;
  return {
    speakerLabels: request.include_speaker_labels ?? 'changes',
    markers: request.include_markers ?? false,
    timecodes: tc
      ? {
          frequencySeconds: tc.frequency_seconds ?? null,
          onParagraphs: tc.on_paragraphs ?? true,
          onSpeakers: tc.on_speakers ?? false,
          onMarkers: tc.on_markers ?? true,
          offsetSeconds: tc.offset_seconds ?? 0,
        }
      : null,
  };
}
