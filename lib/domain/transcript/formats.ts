import type { Cue } from './cues';
import { clockTime, oneLine, subripTime, type Block, type Span } from './document';

/**
 * The text formats of a transcript export, each a generator of pieces of the file, so the HTTP
 * response streams them as they are made. Every user text (names, words, marker labels) goes
 * through the format's escaping; nothing else is interpolated.
 */

export type TextFormat = 'txt' | 'markdown' | 'html' | 'rtf' | 'srt';

/** What every format is given: the composition's name (the title) and its blocks. */
export type TranscriptSource = { readonly title: string; readonly blocks: Iterable<Block> };

// ---------------------------------------------------------------- txt

export function* renderTxt({ title, blocks }: TranscriptSource): Generator<string> {
  yield `${oneLine(title)}\n`;
  for (const b of blocks) {
    const stamp = b.timecode === null ? '' : `[${clockTime(b.timecode)}] `;
    if (b.kind === 'marker') yield `\n${stamp}== ${oneLine(b.label)} ==\n`;
    else
      yield `\n${stamp}${b.speaker === null ? '' : `${oneLine(b.speaker)}: `}${spansText(b.spans, (t) => `[${clockTime(t)}]`, oneLine)}\n`;
  }
}

// ---------------------------------------------------------------- markdown

export function* renderMarkdown({ title, blocks }: TranscriptSource): Generator<string> {
  yield `# ${md(title)}\n`;
  for (const b of blocks) {
    const stamp = b.timecode === null ? '' : `\`${clockTime(b.timecode)}\` `;
    if (b.kind === 'marker') yield `\n## ${stamp}${md(b.label)}\n`;
    else yield `\n${stamp}${b.speaker === null ? '' : `**${md(b.speaker)}:** `}${spansText(b.spans, (t) => `\`${clockTime(t)}\``, md)}\n`;
  }
}

/**
 * Markdown (CommonMark, GFM) syntax in user text escaped: inline punctuation everywhere, and what
 * starts a list, quote or heading at the start of a piece (a piece may start a line).
 */
const md = (text: string) =>
  oneLine(text)
    .replace(/[\\`*_{}[\]<>#|~&]/g, '\\$&')
    .replace(/^([-+=]|\d+(?=[.)]))/, (m) => (/\d/.test(m) ? `${m}\\` : `\\${m}`));

// ---------------------------------------------------------------- html

export function* renderHtml({ title, blocks }: TranscriptSource): Generator<string> {
  yield `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n<title>${esc(title)}</title>\n</head>\n<body>\n<h1>${esc(title)}</h1>\n`;
  for (const b of blocks) {
    const stamp = b.timecode === null ? '' : `<span class="timecode">${clockTime(b.timecode)}</span> `;
    if (b.kind === 'marker') yield `<h2 class="marker">${stamp}${esc(b.label)}</h2>\n`;
    else {
      const speaker = b.speaker === null ? '' : `<strong class="speaker">${esc(b.speaker)}:</strong> `;
      yield `<p>${stamp}${speaker}${spansText(b.spans, (t) => `<span class="timecode">${clockTime(t)}</span>`, esc)}</p>\n`;
    }
  }
  yield '</body>\n</html>\n';
}

const HTML_ESCAPES = new Map([
  ['&', '&amp;'],
  ['<', '&lt;'],
  ['>', '&gt;'],
  ['"', '&quot;'],
  ["'", '&#39;'],
]);
const esc = (text: string) => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES.get(c)!);

// ---------------------------------------------------------------- rtf

/**
 * RTF 1.9: `\uN` for every non-ASCII UTF-16 unit (a signed 16-bit number), then `\'3f` ("?") for
 * readers without Unicode, as Word writes it: a literal `?` after `\uN` makes unrtf drop the rest
 * of the word.
 */
export function* renderRtf({ title, blocks }: TranscriptSource): Generator<string> {
  yield '{\\rtf1\\ansi\\ansicpg1252\\deff0\\uc1{\\fonttbl{\\f0\\fswiss Helvetica;}}\n';
  yield `{\\info{\\title ${rtf(title)}}}\n\\f0\\fs24\n{\\b\\fs32 ${rtf(title)}}\\par\n`;
  for (const b of blocks) {
    const stamp = b.timecode === null ? '' : `[${clockTime(b.timecode)}] `;
    if (b.kind === 'marker') yield `\\par{\\b ${stamp}${rtf(b.label)}}\\par\n`;
    else {
      const speaker = b.speaker === null ? '' : `{\\b ${rtf(b.speaker)}:} `;
      yield `\\par ${stamp}${speaker}${spansText(b.spans, (t) => `[${clockTime(t)}]`, rtf)}\\par\n`;
    }
  }
  yield '}\n';
}

/** One replace over the text: most of a transcript is ASCII, which it leaves as it is (a loop per character cost more than the rest of the RTF). */
const rtf = (text: string): string =>
  oneLine(text).replace(/[\\{}\u0080-\uffff]/g, (c) => (c < '\u0080' ? `\\${c}` : `\\u${signed16(c.charCodeAt(0))}\\'3f`));

const signed16 = (unit: number) => (unit > 0x7fff ? unit - 0x10000 : unit);

// ---------------------------------------------------------------- srt

/** SubRip: numbered cues (cues.ts: `eachCue` of the words), times shifted by `offsetSeconds`. */
export function* renderSrt(cues: Iterable<Cue>, offsetSeconds = 0): Generator<string> {
  let n = 0;
  for (const cue of cues) {
    // A blank line ends a cue: a line of the cue's own never is one (lines are words joined by spaces).
    yield `${++n}\n${subripTime(cue.start + offsetSeconds)} --> ${subripTime(cue.end + offsetSeconds)}\n${linesText(cue.lines)}\n\n`;
  }
}

// ---------------------------------------------------------------- vtt

/**
 * WebVTT (the share page's captions track and the published metadata's `subtitles`): the same
 * cues as SRT. Cue text escapes `&`, `<` and `>` (VTT reads them as markup), and an arrow
 * `-->` inside a word cannot end up read as a timing line since `>` is escaped.
 */
export function* renderVtt(cues: Iterable<Cue>): Generator<string> {
  yield 'WEBVTT\n\n';
  for (const cue of cues) {
    const [start, end] = [cue.start, cue.end].map((t) => subripTime(Math.max(0, t)).replace(',', '.'));
    yield `${start} --> ${end}\n${cue.lines.map(escapeVtt).join('\n')}\n\n`;
  }
}

/** A cue's lines (each one line already: cues.ts), one per line of the file; joined by hand, as this runs for thousands of cues. */
function linesText(lines: readonly string[]): string {
  let text = lines[0];
  for (let i = 1; i < lines.length; i++) text += `\n${lines[i]}`;
  return text;
}

const escapeVtt = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

// ---------------------------------------------------------------- shared

const spansText = (spans: readonly Span[], timecode: (t: number) => string, escape: (s: string) => string) =>
  spans.map((s) => ('timecode' in s ? timecode(s.timecode) : escape(s.text))).join(' ');
