import { Document, HeadingLevel, Packer, Paragraph, TextRun } from 'docx';
import { Readable } from 'node:stream';
import { clockTime, type Block, type Span } from '../../domain/transcript/document';
import type { TranscriptSource } from '../../domain/transcript/formats';

/**
 * The transcript as a Word document (`docx`): a title, then a paragraph per block, the speaker in
 * bold and timecodes in grey. The library builds the whole document before zipping it, so this is
 * the one format whose memory grows with the transcript (about 1 KiB of objects per paragraph);
 * the zip itself streams out.
 */
export function renderDocx({ title, blocks }: TranscriptSource): Readable {
  const children = [new Paragraph({ heading: HeadingLevel.TITLE, children: [new TextRun(xmlText(title))] })];
  for (const b of blocks) children.push(paragraphOf(b));
  const doc = new Document({ title: xmlText(title), creator: 'Media Project Service', sections: [{ children }] });
  // The library's bundle brings its own stream implementation, which Koa would not take for a
  // stream (it would send it as JSON): wrapped into a Node stream.
  return new Readable().wrap(Packer.toStream(doc) as unknown as NodeJS.ReadableStream);
}

function paragraphOf(b: Block): Paragraph {
  const runs: TextRun[] = [];
  if (b.timecode !== null) runs.push(timecodeRun(b.timecode), new TextRun(' '));
  if (b.kind === 'marker') {
    runs.push(new TextRun(xmlText(b.label)));
    return new Paragraph({ heading: HeadingLevel.HEADING_2, children: runs });
  }
  if (b.speaker !== null) runs.push(new TextRun({ text: `${xmlText(b.speaker)}:`, bold: true }), new TextRun(' '));
  b.spans.forEach((s: Span, i) => {
    if (i > 0) runs.push(new TextRun(' '));
    runs.push('timecode' in s ? timecodeRun(s.timecode) : new TextRun(xmlText(s.text)));
  });
  return new Paragraph({ children: runs });
}

const timecodeRun = (seconds: number) => new TextRun({ text: `[${clockTime(seconds)}]`, color: '808080' });

/** XML 1.0 has no control characters but tab and line breaks; the library passes them through. */
const xmlText = (text: string) => text.replace(/[\p{Cc}\u2028\u2029\uFFFE\uFFFF]+/gu, ' ');
