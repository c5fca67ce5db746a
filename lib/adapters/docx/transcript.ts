import { Document, Packer } from 'docx';
import { clockTime, type Block } from '../../domain/transcript/document';
import type { TranscriptSource } from '../../domain/transcript/formats';
import { deflatedEntry, readZip, zipBuffer, type StoredEntry } from '../zip/zip-buffer';

/**
 * The transcript as a Word document: a title, then a paragraph per block, the speaker in bold and
 * timecodes in grey.
 *
 * The `docx` library makes the package: styles (with the Title and Heading 2 used here), theme,
 * settings, fonts, numbering, relationships, content types. Those parts are the same for every
 * transcript, so it makes them once (an empty document) and each export copies them, compressed
 * as they are, around its own two parts: the body (`word/document.xml`, written here as text) and
 * the core properties (title, dates). Made by the library per export, an hour cost ~35 ms of CPU:
 * ~20 ms for its objects of a thousand runs, ~8 ms for the same package parts again and ~6 ms for
 * its JavaScript deflate; this way, about what the text formats cost. The document is whole before
 * it is sent (a zip's directory comes last): ~100 KiB of XML for an hour.
 */
export type DocxRenderer = (source: TranscriptSource) => Promise<Buffer>;

export function docxRenderer(options: { readonly now: () => Date; readonly creator?: string }): DocxRenderer {
  const creator = options.creator ?? 'Media Project Service';
  let template: Promise<readonly StoredEntry[]> | null = null;
  const parts = () =>
    (template ??= Packer.toBuffer(new Document({ creator, sections: [{ children: [] }] })).then(partsOf, (err: unknown) => {
      template = null; // tried again by the next export
      throw err;
    }));
  return async ({ title, blocks }) => {
    const own = new Map([
      ['word/document.xml', () => deflatedEntry('word/document.xml', documentXml(title, blocks))],
      ['docProps/core.xml', () => deflatedEntry('docProps/core.xml', coreXml(title, creator, options.now()))],
    ]);
    return zipBuffer((await parts()).map((p) => own.get(p.name)?.() ?? p));
  };
}

/** The library's package as parts; it must have the two each export replaces, or the documents would lack them. */
function partsOf(archive: Buffer): readonly StoredEntry[] {
  const parts = readZip(archive);
  for (const name of OWN_PARTS) if (!parts.some((p) => p.name === name)) throw new Error(`docx: the library's package has no ${name}`);
  return parts;
}

const OWN_PARTS = ['word/document.xml', 'docProps/core.xml'];

/** The package's core properties, as the library writes them, with this transcript's title and time. */
function coreXml(title: string, creator: string, now: Date): string {
  const at = now.toISOString();
  return (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
    '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ' +
    'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" ' +
    'xmlns:dcmitype="http://purl.org/dc/dcmitype/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">' +
    `<dc:title>${escapeXml(xmlText(title))}</dc:title><dc:creator>${escapeXml(creator)}</dc:creator>` +
    `<cp:lastModifiedBy>${escapeXml(creator)}</cp:lastModifiedBy><cp:revision>1</cp:revision>` +
    `<dcterms:created xsi:type="dcterms:W3CDTF">${at}</dcterms:created>` +
    `<dcterms:modified xsi:type="dcterms:W3CDTF">${at}</dcterms:modified></cp:coreProperties>`
  );
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
