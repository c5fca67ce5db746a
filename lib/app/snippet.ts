import { invalidInput } from '../domain/errors';
import type { SearchEntry, SearchField, SearchQuery, SearchType } from '../ports/search-index';

/**
 * The search rules both SearchIndex adapters share, so that they read a query, check a hit and
 * cut a snippet alike: words are runs of letters, digits and marks (what FTS5's unicode61 keeps),
 * folded to lower case without diacritics. The engines fold the words they index themselves; this
 * folding decides which field a hit matched, checks MongoDB's candidates, and places the marks.
 */

/** A word of the query, or a phrase: words that must occur in order and adjacent. */
export type Clause = {
  /** As typed, for the engine to fold by its own rules. */
  readonly raw: readonly string[];
  readonly folded: readonly string[];
};

export type SearchPlan = {
  /** Every clause must occur in the field; empty when the query has no word (nothing is found). */
  readonly clauses: readonly Clause[];
  /** The query as `nameKey` reads a name, or null when names are not searched. */
  readonly exactName: string | null;
  readonly fields: readonly SearchField[];
  readonly types: readonly SearchType[] | null;
  readonly after: string | null;
  readonly before: string | null;
};

const MAX_WORDS = 64;
const SORTS = new Set(['relevance', 'newest', 'oldest']);
const TOKEN = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
const QUOTES = /["“”„]/g;
const ASCII = /^\p{ASCII}*$/u;
const ASCII_WORD = '[A-Za-z0-9]';
const SNIPPET = { before: 5, words: 15, after: 3, maxWordChars: 48, maxGapChars: 12 };

const isAscii = (text: string) => ASCII.test(text);
export const fold = (text: string) =>
  isAscii(text)
    ? text.toLowerCase()
    : text
        .toLowerCase()
        .normalize('NFD')
        .replace(/\p{M}+/gu, '');
/** A name as the "equals the query" rule compares it: folded, without double quotes, spaces collapsed. */
export const nameKey = (text: string) => fold(text.replace(QUOTES, '')).trim().replace(/\s+/g, ' ');
/** What `types` selects an entry by: its kind, or its media type for media. */
export const typeOf = (entry: SearchEntry): string => (entry.kind === 'media' ? (entry.media_type ?? 'other') : entry.kind);

const words = (text: string) => text.match(TOKEN) ?? [];

function parseClauses(text: string): Clause[] {
  const parts = text.replace(QUOTES, '"').split('"');
  const clauses: Clause[] = [];
  const seen = new Set<string>();
  const add = (raw: string[]) => {
    const folded = raw.map(fold);
    const key = folded.join(' ');
    if (raw.length === 0 || seen.has(key)) return;
    seen.add(key);
    clauses.push({ raw, folded });
  };
  parts.forEach((part, i) => {
    // Odd parts sat between two quotes; the text after a quote without its pair is plain words.
    const quoted = i % 2 === 1 && i < parts.length - 1;
    if (quoted) add(words(part));
    else for (const word of words(part)) add([word]);
  });
  if (clauses.reduce((n, c) => n + c.raw.length, 0) > MAX_WORDS) throw invalidInput(`the search text has more than ${MAX_WORDS} words`);
  return clauses;
}

function bound(name: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw invalidInput(`${name} must be a date-time`);
  return at.toISOString();
}

/** Checks a query as both adapters must (`invalid_input` otherwise) and reads its text. */
export function planSearch(query: SearchQuery): SearchPlan {
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > 100) throw invalidInput('limit must be an integer from 1 to 100');
  if (!SORTS.has(query.sort)) throw invalidInput('sort must be relevance, newest or oldest');
  const fields: SearchField[] = query.match?.length ? [...new Set(query.match)] : ['name', 'content'];
  return {
    clauses: parseClauses(query.text),
    exactName: fields.includes('name') ? nameKey(query.text) : null,
    fields,
    types: query.types?.length ? [...new Set(query.types)] : null,
    after: bound('updated_after', query.updated_after),
    before: bound('updated_before', query.updated_before),
  };
}

// ---- Finding clauses in text -----------------------------------------------------------------

type Token = { readonly start: number; readonly end: number; readonly folded: string };

function* tokensFrom(text: string, from: number): Generator<Token> {
  const re = new RegExp(TOKEN.source, 'gu');
  re.lastIndex = from;
  for (let m = re.exec(text); m; m = re.exec(text)) yield { start: m.index, end: m.index + m[0].length, folded: fold(m[0]) };
}

/** For ASCII text, where words are [A-Za-z0-9]+: the clause as a regex, which V8 runs far faster than a token walk. */
const asciiPattern = (clause: Clause) =>
  `(?<!${ASCII_WORD})${clause.folded.map((w) => w.replace(/[^A-Za-z0-9]/g, '\\$&')).join(`[^A-Za-z0-9]+`)}(?!${ASCII_WORD})`;

const occursAt = (tokens: readonly Token[], at: number, clause: Clause) =>
  at >= 0 && at + clause.folded.length <= tokens.length && clause.folded.every((w, k) => tokens[at + k].folded === w);

/** Whether every clause occurs in `text`. */
export function containsAll(text: string, clauses: readonly Clause[]): boolean {
  if (clauses.length === 0) return false;
  if (isAscii(text)) return clauses.every((c) => new RegExp(asciiPattern(c), 'i').test(text));
  const tokens = [...tokensFrom(text, 0)];
  return clauses.every((c) => tokens.some((_, at) => occursAt(tokens, at, c)));
}

// ---- Snippets ---------------------------------------------------------------------------------

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * Where to start walking tokens: a little before the first match when a regex can find it (ASCII
 * text), so a match deep in an hour of transcript costs one native scan. -1: no match at all.
 */
function walkStart(text: string, clauses: readonly Clause[]): number {
  if (!isAscii(text)) return 0;
  const first = new RegExp(clauses.map(asciiPattern).join('|'), 'i').exec(text);
  if (!first) return -1;
  if (first.index < 400) return 0;
  // Start after a separator, not in the middle of a word.
  const gap = /[^A-Za-z0-9]/g;
  gap.lastIndex = first.index - 400;
  return gap.exec(text)?.index ?? 0;
}

/** Tokens read from `from` on only as far as asked: the window, not the whole hour. */
function lazyTokens(text: string, from: number) {
  const walk = tokensFrom(text, from);
  const list: Token[] = [];
  const pull = (count: number) => {
    while (list.length < count) {
      const next = walk.next();
      if (next.done) break;
      list.push(next.value);
    }
    return list.length;
  };
  return { list, pull };
}

function firstOccurrence(tokens: ReturnType<typeof lazyTokens>, clauses: readonly Clause[]): { at: number; length: number } | null {
  for (let read = 1; tokens.pull(read) === read; read += 1) {
    const hit = clauses.find((c) => occursAt(tokens.list, read - c.folded.length, c));
    if (hit) return { at: read - hit.folded.length, length: hit.folded.length };
  }
  return null;
}

/** Every word of every occurrence that lies wholly inside the window. */
function marks(tokens: readonly Token[], clauses: readonly Clause[], start: number, end: number): Set<number> {
  const marked = new Set<number>();
  for (let at = start; at < Math.min(end, tokens.length); at += 1) {
    for (const c of clauses) {
      if (at + c.folded.length <= end && occursAt(tokens, at, c)) c.folded.forEach((_, k) => marked.add(at + k));
    }
  }
  return marked;
}

function render(text: string, shown: readonly Token[], isMarked: (k: number) => boolean, cutBefore: boolean, cutAfter: boolean): string {
  if (shown.length === 0) return '';
  const parts = shown.map((t, k) => {
    const gap = k === 0 ? '' : clip(text.slice(shown[k - 1].end, t.start).replace(/\s+/g, ' '), SNIPPET.maxGapChars);
    const word = escapeHtml(clip(text.slice(t.start, t.end), SNIPPET.maxWordChars));
    return escapeHtml(gap) + (isMarked(k) ? `<mark>${word}</mark>` : word);
  });
  const last = shown[shown.length - 1];
  // Punctuation right after the last word ("end.") reads better kept.
  const tail = escapeHtml(/^[^\s\p{L}\p{N}]{0,3}/u.exec(text.slice(last.end, last.end + 3))?.[0] ?? '');
  return `${cutBefore ? '…' : ''}${parts.join('')}${tail}${cutAfter ? '…' : ''}`;
}

/**
 * About 15 words of `text` around the first occurrence of any clause, HTML-escaped, with each
 * word of every occurrence inside the window in `<mark>`, and `…` where text was left out. Without
 * an occurrence, the first words and no mark.
 */
export function snippet(text: string, clauses: readonly Clause[]): string {
  const from = clauses.length > 0 ? walkStart(text, clauses) : -1;
  const tokens = lazyTokens(text, Math.max(from, 0));
  const match = from < 0 ? null : firstOccurrence(tokens, clauses);
  const start = match ? Math.max(0, match.at - SNIPPET.before) : 0;
  const end = match ? Math.max(start + SNIPPET.words, match.at + match.length + SNIPPET.after) : SNIPPET.words;
  const more = tokens.pull(end + 1) > end; // one more token tells whether text follows the window
  const marked = match ? marks(tokens.list, clauses, start, end) : new Set<number>();
  return render(text, tokens.list.slice(start, end), (k) => marked.has(start + k), start > 0 || from > 0, more);
}
