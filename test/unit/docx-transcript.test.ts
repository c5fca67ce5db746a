import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import mammoth from 'mammoth';
import { docxRenderer } from '../../lib/adapters/docx/transcript';
import type { Block } from '../../lib/domain/transcript/document';
import { hasTool } from '../fixtures/tools';

/**
 * Issue 22: the docx adapter. Its document.xml is written by the adapter (the library builds the
 * rest of the package), so the XML itself is checked here: well-formed, every user text escaped
 * and free of what XML 1.0 forbids, the styles and run properties Word shows, and mammoth's reading.
 */

const NOW = new Date('2026-11-26T21:00:00.000Z');
const TITLE = 'Ep. 1 <live> & "more"\u0007 😀 \ud800';
const blocks: Block[] = [
  { kind: 'marker', timecode: 0, label: 'Intro & <setup>' },
  {
    kind: 'paragraph',
    timecode: 0,
    speaker: 'Ana & Co',
    spans: [{ text: 'Hello <there>,' }, { timecode: 30 }, { text: 'and\tgood\u000bbye.' }],
  },
  { kind: 'paragraph', timecode: null, speaker: null, spans: [{ text: 'Über café ✨' }] },
  { kind: 'marker', timecode: null, label: 'End' },
];

describe('docx transcript: the Word document', () => {
  let bytes: Buffer;
  before(async () => {
    bytes = await docxRenderer({ now: () => NOW })({ title: TITLE, blocks });
  });

  it('is a zip that mammoth reads: the title, markers as headings, speakers in bold, every text escaped', async () => {
    assert.equal(bytes.subarray(0, 2).toString(), 'PK');
    const { value: text } = await mammoth.extractRawText({ buffer: bytes });
    assert.deepEqual(text.trim().split(/\n\n/), [
      'Ep. 1 <live> & "more"  😀 \ufffd',
      '[00:00:00] Intro & <setup>',
      '[00:00:00] Ana & Co: Hello <there>, [00:00:30] and good bye.',
      'Über café ✨',
      'End',
    ]);
    const { value: html } = await mammoth.convertToHtml({ buffer: bytes });
    assert.match(html, /<h2>\[00:00:00\] Intro &amp; &lt;setup&gt;<\/h2>/);
    assert.match(html, /<p><strong>Ana &amp; Co: <\/strong>|<p>\[00:00:00\] <strong>Ana &amp; Co: <\/strong>/);
    assert.match(html, /<h2>End<\/h2>/);
  });

  it('has a well-formed document.xml with the Title and Heading2 styles, bold speakers and grey timecodes', function () {
    const xml = documentXml(bytes);
    if (xml === null) return this.skip(); // no unzip here: mammoth's reading above is the check
    assert.equal(XMLValidator.validate(xml), true);
    if (hasTool('xmllint')) execFileSync('xmllint', ['--noout', tempFile('document.xml', xml)]);
    const body = new XMLParser({ ignoreAttributes: false, trimValues: false, isArray: (name) => ['w:p', 'w:r'].includes(name) }).parse(xml)[
      'w:document'
    ]['w:body'];
    const paragraphs = body['w:p'] as Record<string, any>[];
    const style = (p: Record<string, any>) => p['w:pPr']?.['w:pStyle']?.['@_w:val'] ?? null;
    assert.deepEqual(paragraphs.map(style), ['Title', 'Heading2', null, null, 'Heading2']);
    const runs = (p: Record<string, any>) =>
      (p['w:r'] as Record<string, any>[]).map((r) => ({
        text: String(r['w:t']['#text'] ?? r['w:t']),
        bold: r['w:rPr']?.['w:b'] !== undefined,
        color: r['w:rPr']?.['w:color']?.['@_w:val'] ?? null,
      }));
    assert.deepEqual(runs(paragraphs[2]), [
      { text: '[00:00:00] ', bold: false, color: '808080' },
      { text: 'Ana & Co: ', bold: true, color: null },
      { text: 'Hello <there>, ', bold: false, color: null },
      { text: '[00:00:30] ', bold: false, color: '808080' },
      { text: 'and good bye.', bold: false, color: null },
    ]);
    assert.ok(body['w:sectPr'], 'the section properties (page size and margins) end the body');
  });

  it("is the library's package around it: its styles, an archive unzip -t passes, this title and time in the core properties", function () {
    const styles = documentXml(bytes, 'word/styles.xml');
    if (styles === null) return this.skip();
    for (const id of ['Title', 'Heading2']) assert.ok(styles.includes(`w:styleId="${id}"`), `the ${id} style`);
    execFileSync('unzip', ['-tq', tempFile('t.docx', bytes)]);
    const core = documentXml(bytes, 'docProps/core.xml')!;
    assert.equal(XMLValidator.validate(core), true);
    const props = new XMLParser({ trimValues: false }).parse(core)['cp:coreProperties'];
    assert.equal(props['dc:title'], 'Ep. 1 <live> & "more"  😀 \ufffd');
    assert.equal(props['dc:creator'], 'Media Project Service');
    assert.equal(props['dcterms:created'], NOW.toISOString());
  });

  it('is read by python-docx: paragraphs with their styles, bold and grey runs, the core title', function () {
    const python = pythonWithDocx();
    if (python === null) return this.skip(); // apt-get install python3-docx
    const script = `
import json, sys, docx
d = docx.Document(sys.argv[1])
print(json.dumps({
  "title": d.core_properties.title,
  "paragraphs": [[p.style.name, [[r.text, bool(r.bold), str(r.font.color.rgb) if r.font.color.rgb else None] for r in p.runs]] for p in d.paragraphs],
}))`;
    const read = JSON.parse(execFileSync(python, ['-c', script, tempFile('t.docx', bytes)], { encoding: 'utf8' }));
    assert.equal(read.title, 'Ep. 1 <live> & "more"  😀 \ufffd');
    assert.deepEqual(read.paragraphs, [
      ['Title', [['Ep. 1 <live> & "more"  😀 \ufffd', false, null]]],
      [
        'Heading 2',
        [
          ['[00:00:00] ', false, '808080'],
          ['Intro & <setup>', false, null],
        ],
      ],
      [
        'Normal',
        [
          ['[00:00:00] ', false, '808080'],
          ['Ana & Co: ', true, null],
          ['Hello <there>, ', false, null],
          ['[00:00:30] ', false, '808080'],
          ['and good bye.', false, null],
        ],
      ],
      ['Normal', [['Über café ✨', false, null]]],
      ['Heading 2', [['End', false, null]]],
    ]);
  });

  it('makes each document apart: a second one has its own title and body, the shared parts unchanged', async () => {
    const render = docxRenderer({ now: () => NOW });
    const [a, b] = await Promise.all([render({ title: 'A', blocks: [] }), render({ title: 'B', blocks: blocks.slice(2) })]);
    assert.equal((await mammoth.extractRawText({ buffer: a })).value.trim(), 'A');
    assert.deepEqual((await mammoth.extractRawText({ buffer: b })).value.trim().split(/\n\n/), ['B', 'Über café ✨', 'End']);
  });
});

/** word/document.xml (or another part) out of the package, with `unzip`; null where it is not installed. */
function documentXml(docx: Buffer, part = 'word/document.xml'): string | null {
  if (!hasTool('unzip')) return null;
  return execFileSync('unzip', ['-p', tempFile('t.docx', docx), part]).toString('utf8');
}

/** A Python that has python-docx (Debian's python3-docx is for the system's python3); null when none has. */
function pythonWithDocx(): string | null {
  for (const python of ['python3', '/usr/bin/python3']) {
    try {
      execFileSync(python, ['-c', 'import docx'], { stdio: 'ignore' });
      return python;
    } catch {
      // not this one
    }
  }
  return null;
}

function tempFile(name: string, content: string | Buffer): string {
  const file = join(mkdtempSync(join(tmpdir(), 'docx-')), name);
  writeFileSync(file, content);
  return file;
}
