import { ms, type Word } from '../edl';
import { oneLine, type SpeakerLabels } from './document';

/**
 * Caption cues from a composition's words, by the usual subtitle rules (those of the BBC and
 * Netflix guides): at most two lines of 42 characters, on screen 1 to 7 seconds, one speaker per
 * cue, and a cue broken after punctuation when the text allows, so a cue reads as a phrase. SRT
 * export and the share page's captions (issue 12) use the same cues.
 */

export type Cue = {
  readonly start: number;
  readonly end: number;
  readonly speaker: string | null;
  /**
   * One or two lines, each at most `CUE_RULES.lineChars` characters (a longer single word stays
   * whole), without line breaks or control characters (a word's or name's own are spaces).
   */
  readonly lines: readonly string[];
};

export const CUE_RULES = { lineChars: 42, lines: 2, maxSeconds: 7, minSeconds: 1, pauseSeconds: 1.5 } as const;

/** A speaker label ("Ana: ") starts the cue's first line and counts toward its length. */
export type CueOptions = { labels?: SpeakerLabels };

// What ends a phrase, and a sentence (its mark, then perhaps a closing quote or bracket), by the
// last characters' codes: these checks run for every word, where a regular expression, or even
// a Set lookup, cost more than the rest of the word's work.
const endsPhrase = (text: string): boolean => isPunctuation(text.charCodeAt(text.length - 1));

function endsSentence(text: string): boolean {
  const last = text.charCodeAt(text.length - 1);
  return isSentenceMark(last) || (isClosing(last) && text.length > 1 && isSentenceMark(text.charCodeAt(text.length - 2)));
}

/** `. ! ? …` */
const isSentenceMark = (c: number): boolean => c === 0x2e || c === 0x21 || c === 0x3f || c === 0x2026;

/** `" ” » )` */
const isClosing = (c: number): boolean => c === 0x22 || c === 0x201d || c === 0xbb || c === 0x29;

/** `. , ! ? ; : … ) ] " ” » — – -` */
function isPunctuation(c: number): boolean {
  switch (c) {
    case 0x2e:
    case 0x2c:
    case 0x21:
    case 0x3f:
    case 0x3b:
    case 0x3a:
    case 0x2026:
    case 0x29:
    case 0x5d:
    case 0x22:
    case 0x201d:
    case 0xbb:
    case 0x2014:
    case 0x2013:
    case 0x2d:
      return true;
    default:
      return false;
  }
}

/**
 * Lazily, in order; each cue ends no later than the next one starts. The groups of words that
 * obey the text and length rules become cues here, a cue held back until the next one's start
 * is known (one generator less per cue than a stage of its own: there are thousands an hour).
 */
export function* eachCue(words: Iterable<Word>, options: CueOptions = {}): Generator<Cue> {
  const labels = options.labels ?? 'off';
  const fits = fitsCue(labels);
  const textsOf = textsWithLabel(labels);
  let pending: Cue | null = null;
  for (const group of withoutShortGroups(tokenGroups(words, fits), fits)) {
    const cue = cueOfTexts(group, textsOf(group));
    if (pending) yield timed(pending, cue.start);
    pending = cue;
  }
  if (pending) yield timed(pending, Infinity);
}

export const cues = (words: readonly Word[], options: CueOptions = {}): Cue[] => [...eachCue(words, options)];

type Token = {
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly speaker: string | null;
  /** The first word of a run of one speaker. */
  readonly turn: boolean;
};

/**
 * Whether the tokens, and `next` after them when given, make one cue. `chars`: the tokens' text
 * lengths summed, when the caller keeps that count as it grows its group.
 */
type Fits = (tokens: readonly Token[], next?: Token, chars?: number) => boolean;

/**
 * `fits` of the rules without building the cue: it runs for every word, on the group so far, so
 * it adds up lengths where `linesOf` would join texts (an hour of words copied into arrays and
 * strings per word was most of an SRT export's time). Same answer as `linesOf(...) !== null`.
 * No closures inside: one made per call costs more than the sums (more still under tsx).
 */
function fitsCue(labels: SpeakerLabels): Fits {
  return (tokens, next, chars = charsOf(tokens)) => {
    const first = tokens[0];
    if ((next ?? tokens[tokens.length - 1]).end - first.start > CUE_RULES.maxSeconds) return false;
    const label = labelled(first, labels) ? first.speaker!.length + 2 : 0;
    const count = tokens.length + (next ? 1 : 0);
    const total = label + chars + count - 1 + (next ? next.text.length : 0);
    const max = CUE_RULES.lineChars;
    if (total <= max || count === 1) return true;
    if (total > max * 2 + 1) return false;
    // Two lines: the longest first line that fits leaves the shortest second one.
    let line = label + first.text.length;
    if (line > max) return false;
    for (let i = 1; i < count; i++) {
      const length = i < tokens.length ? tokens[i].text.length : next!.text.length;
      if (line + 1 + length > max) break;
      line += 1 + length;
    }
    return total - line - 1 <= max;
  };
}

function charsOf(tokens: readonly Token[]): number {
  let chars = 0;
  for (const t of tokens) chars += t.text.length;
  return chars;
}

/** Groups words into cues that obey the text and length rules; times are the words' own. */
function* tokenGroups(words: Iterable<Word>, fits: Fits): Generator<Token[]> {
  let group: Token[] = [];
  let chars = 0; // the group's text lengths summed
  let lastSpeaker: string | null | undefined = undefined;
  for (const word of words) {
    const text = word.text.trim();
    if (!text) continue;
    const token: Token = { text, start: word.start, end: word.end, speaker: word.speaker, turn: word.speaker !== lastSpeaker };
    lastSpeaker = word.speaker;
    const last = group[group.length - 1];
    if (last && (token.speaker !== last.speaker || token.start - last.end >= CUE_RULES.pauseSeconds)) {
      yield group;
      group = [];
      chars = 0;
    }
    if (group.length && !fits(group, token, chars)) {
      const cut = breakPoint(group);
      yield group.slice(0, cut);
      group = group.slice(cut);
      chars = charsOf(group);
      if (group.length && !fits(group, token, chars)) {
        yield group;
        group = [];
        chars = 0;
      }
    }
    group.push(token);
    chars += text.length;
    if (group.length > 1 && token.end - group[0].start >= CUE_RULES.minSeconds * 2 && endsSentence(text)) {
      yield group; // a sentence that ends well into a cue ends it
      group = [];
      chars = 0;
    }
  }
  if (group.length) yield group;
}

/**
 * A group the next one leaves less than `minSeconds` on screen (a last word after a sentence
 * ended a cue, just before the other speaker starts) joins the group before or after it, when
 * one of them is the same speaker's, close enough and the two still fit.
 */
function* withoutShortGroups(groups: Iterable<Token[]>, fits: Fits): Generator<Token[]> {
  const joinable = (a: Token[], b: Token[]) =>
    a[0].speaker === b[0].speaker && b[0].start - a[a.length - 1].end < CUE_RULES.pauseSeconds && fits([...a, ...b]);
  let previous: Token[] | null = null;
  let current: Token[] | null = null;
  for (let next of groups) {
    if (current && next[0].start - current[0].start < CUE_RULES.minSeconds) {
      if (previous && joinable(previous, current)) [previous, current] = [null, [...previous, ...current]];
      else if (joinable(current, next)) [current, next] = [null, [...current, ...next]];
    }
    if (previous) yield previous;
    previous = current;
    current = next;
  }
  if (previous) yield previous;
  if (current) yield current;
}

/** A cue's word texts, its first one labelled as `labels` says. */
const textsWithLabel =
  (labels: SpeakerLabels) =>
  (tokens: readonly Token[]): string[] => {
    const texts = tokens.map((t) => t.text);
    if (labelled(tokens[0], labels)) texts[0] = `${tokens[0].speaker}: ${texts[0]}`;
    return texts;
  };

/** Whether a cue starting with `first` starts with its speaker's name. */
const labelled = (first: Token, labels: SpeakerLabels): boolean =>
  first.speaker !== null && (labels === 'every_paragraph' || (labels === 'changes' && first.turn));

/**
 * Where a full group is cut: after its last punctuated word in the second half, so the next cue
 * starts a phrase; at its end when there is none.
 */
function breakPoint(group: readonly Token[]): number {
  for (let i = group.length - 1; i >= Math.ceil(group.length / 2); i--) {
    if (endsPhrase(group[i - 1].text)) return i;
  }
  return group.length;
}

/**
 * The words as one line, or two lines split where both fit, preferring after punctuation, then the
 * most even split; null when they do not fit in two lines. One word longer than a line is its own line.
 */
export function linesOf(texts: readonly string[]): string[] | null {
  const max = CUE_RULES.lineChars;
  let total = -1;
  for (const t of texts) total += t.length + 1;
  if (total <= max || texts.length === 1) return [joined(texts, 0, texts.length)];
  if (total > max * 2 + 1) return null;
  let best = -1;
  let bestScore = Infinity;
  let first = -1; // the first line's length with the split before `at`
  for (let at = 1; at < texts.length; at++) {
    first += texts[at - 1].length + 1;
    if (first > max) break; // it only grows
    const second = total - first - 1;
    if (second > max) continue;
    const score = Math.abs(first - second) - (endsPhrase(texts[at - 1]) ? max : 0);
    if (score < bestScore) {
      best = at;
      bestScore = score;
    }
  }
  return best < 0 ? null : [joined(texts, 0, best), joined(texts, best, texts.length)];
}

/** `texts.slice(from, to).join(' ')` without the copy: this makes every line of every cue. */
function joined(texts: readonly string[], from: number, to: number): string {
  let line = texts[from];
  for (let i = from + 1; i < to; i++) line += ` ${texts[i]}`;
  return line;
}

function cueOfTexts(tokens: readonly Token[], texts: readonly string[]): Cue {
  const lines = linesOf(texts) ?? [texts.join(' ')];
  return {
    start: tokens[0].start,
    end: tokens[tokens.length - 1].end,
    speaker: tokens[0].speaker,
    // Split by the texts as they are (a line break counts one character), then made one line each.
    lines: texts.some(breaksLine) ? lines.map(oneLine) : lines,
  };
}

/** Whether `oneLine` would change the text: a loop over its codes, as most cues have none and a regular expression per line cost a sixth of an SRT export. */
function breaksLine(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029) return true;
  }
  return false;
}

/** At least `minSeconds` on screen where the next cue leaves room, never more than `maxSeconds`. */
function timed(cue: Cue, nextStart: number): Cue {
  const end = Math.min(Math.max(cue.end, cue.start + CUE_RULES.minSeconds), nextStart, cue.start + CUE_RULES.maxSeconds);
  return { start: cue.start, end: ms(Math.max(end, cue.start)), speaker: cue.speaker, lines: cue.lines };
}
