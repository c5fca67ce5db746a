import type { TimeSpan, Word } from './edl';
import { invalidInput, type AppError } from './errors';

/**
 * Editing a composition by its text (issue 20, item 11): the client gets the derived transcript,
 * deletes words from its text and sends it back; what it deleted is cut. Only deletions are
 * editing by text: a word added, changed or moved has no media to play, so it is refused, naming it.
 */

/** A word of the derived transcript as the API shows it: its id names it at one revision of the composition. */
export type TranscriptWord = {
  readonly id: string;
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly speaker: string | null;
  readonly confidence: number;
};

/** Ids are positions (`w0`, `w1`, …): the text is always sent back with the revision it was read at. */
export const transcriptWords = (words: readonly Word[]): TranscriptWord[] =>
  words.map((w, i) => ({ id: `w${i}`, text: w.text, start: w.start, end: w.end, speaker: w.speaker, confidence: w.confidence }));

/** The text a client edits: the words, one space apart. */
export const transcriptText = (words: readonly Word[]): string => words.map((w) => w.text.trim()).join(' ');

const tokens = (text: string): string[] => text.split(/\s+/u).filter((t) => t !== '');

/**
 * Which words `text` deleted: its tokens must be the words' tokens in order, some left out (a
 * word whose text is several tokens stays while any of them does). Matching takes the earliest
 * word that fits, so of repeated words ("the the" edited to "the") the later one goes. The
 * first token that matches nothing after the previous one is the refusal: added, or moved.
 */
export function deletedWords(words: readonly Word[], text: string): number[] | AppError {
  const wordTokens = words.flatMap((w, index) => tokens(w.text).map((token) => ({ token, index })));
  const kept = new Set<number>();
  let at = 0;
  for (const [n, token] of tokens(text).entries()) {
    while (at < wordTokens.length && wordTokens[at].token !== token) at++;
    if (at === wordTokens.length)
      return refusal(
        token,
        n,
        wordTokens.some((w) => w.token === token),
      );
    kept.add(wordTokens[at++].index);
  }
  return words.map((_, i) => i).filter((i) => !kept.has(i));
}

function refusal(token: string, n: number, elsewhere: boolean): AppError {
  const what = elsewhere ? 'is out of order (moved or repeated)' : 'is not in the transcript (added or changed)';
  return invalidInput(`text: word ${n + 1} ${JSON.stringify(token)} ${what}; editing by text only deletes words`);
}

/**
 * The composition time the deleted words occupy: a run of neighbouring deleted words is one
 * range from the first's start to the last's end, so the pauses between them go too.
 */
export function rangesOfWords(words: readonly Word[], deleted: readonly number[]): TimeSpan[] {
  const ranges: TimeSpan[] = [];
  let previous = -2;
  for (const i of deleted) {
    const w = words[i];
    const last = ranges[ranges.length - 1];
    if (i === previous + 1 && last) ranges[ranges.length - 1] = { from: last.from, to: Math.max(last.to, w.end) };
    else ranges.push({ from: w.start, to: w.end });
    previous = i;
  }
  return ranges.filter((r) => r.to > r.from);
}
