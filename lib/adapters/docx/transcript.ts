import { Document, Packer } from 'docx';
import { clockTime, type Block } from '../../domain/transcript/document';
import type { TranscriptSource } from '../../domain/transcript/formats';

/**
 * The transcript as a Word document: a title, then a paragraph per block, the speaker in bold and
 * timecodes in grey. The `docx` library makes the package (styles with their Title and Heading 2,
 * theme, settings, fonts, relationships, properties) and zips it; the body, `word/document.xml`,
 * is written here as text and handed to it as an override. Built as the library's objects, an
 * hour's thousand runs cost ~20 ms before zipping (each run several objects, then their XML); as
 * text they cost about what the txt export does. The document is whole before it is sent (a zip's
 * directory comes last): ~100 KiB of XML for an hour.
 */
export async function renderDocx({ title, blocks }: TranscriptSource): Promise<Buffer> {
  const doc = new Document({ title: xmlText(title), creator: 'Media Project Service', sections: [{ children: [] }] });
  return Packer.toBuffer(doc, false, [{ path: 'word/document.xml', data: documentXml(title, blocks) }]);
}

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/** The library's own page set-up for a section: A4 portrait, 1" margins. */
const SECTION =
  '<w:sectPr><w:pgSz w:w="11906" w:h="16838" w:orient="portrait"/>' +
  '<w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/>' +
  '<w:pgNumType/><w:docGrid w:linePitch="360"/></w:sectPr>';

const BOLD = '<w:rPr><w:b/><w:bCs/></w:rPr>';
const GREY = '<w:rPr><w:color w:val="808080"/></w:rPr>';

/** WordprocessingML of the title and the blocks, a paragraph each. */
export function documentXml(title: string, blocks: Iterable<Block>): string {
  let xml = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="${W}"><w:body>`;
  xml += `<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr>${run(title)}</w:p>`;
  for (const b of blocks) xml += paragraphXml(b);
  return `${xml}${SECTION}</w:body></w:document>`;
}

/**
 * The fewest runs that show the block: a run per piece that looks different, the spaces between
 * pieces at the end of the run before them (a run of its own for a space is what Word would merge).
 */
function paragraphXml(b: Block): string {
  let xml = b.kind === 'marker' ? '<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr>' : '<w:p>';
  if (b.timecode !== null) xml += run(`[${clockTime(b.timecode)}] `, GREY);
  if (b.kind === 'marker') return `${xml}${run(b.label)}</w:p>`;
  if (b.speaker !== null) xml += run(`${b.speaker}: `, BOLD);
  for (let i = 0; i < b.spans.length; i++) {
    const s = b.spans[i];
    const after = i < b.spans.length - 1 ? ' ' : '';
    xml += 'timecode' in s ? run(`[${clockTime(s.timecode)}]${after}`, GREY) : run(s.text + after);
  }
  return `${xml}</w:p>`;
}

/** A run of text; `preserve`, as its spaces at either end are part of it. */
const run = (text: string, properties = '') => `<w:r>${properties}<w:t xml:space="preserve">${escapeXml(xmlText(text))}</w:t></w:r>`;

const escapeXml = (text: string) => text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));

/**
 * What XML 1.0 cannot hold out of user text: control characters (line breaks too: a run is one
 * line), U+FFFE/U+FFFF, and lone surrogates (as U+FFFD, as a UTF-8 encoder writes them anyway).
 */
const xmlText = (text: string) =>
  text
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
    .replace(/[\p{Cc}\u2028\u2029\uFFFE\uFFFF]+/gu, ' ');
