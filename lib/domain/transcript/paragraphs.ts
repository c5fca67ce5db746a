import type { Word } from '../edl';

/**
 * A composition's derived words grouped for reading: a new paragraph where the speaker changes,
 * after a pause, or when the current one has run for `everySeconds`, so each paragraph's timecode
 * is never far from its words. The project page, search snippets' context and the transcript
 * export read the same paragraphs.
 */

export type Paragraph = {
  readonly start: number;
  readonly end: number;
  readonly speaker: string | null;
  /** Set on the first paragraph of each run of one speaker; null when unchanged or unknown. */
  readonly speakerLabel: string | null;
  /** Its words, blank ones left out (the export places inline timecodes between them). */
  readonly words: readonly Word[];
  readonly text: string;
};

export type ParagraphOptions = { everySeconds?: number; pauseSeconds?: number };

export const PARAGRAPH_DEFAULTS = { everySeconds: 30, pauseSeconds: 2 } as const;

/**
 * Lazily, so a one-hour transcript is never held as paragraphs and text at once. Runs for every
 * word of an export: the state is plain locals (no object or closure per paragraph), and a
 * paragraph's text is joined only when read (the export reads its words instead).
 */
export function* eachParagraph(words: Iterable<Word>, options: ParagraphOptions = {}): Generator<Paragraph> {
  const every = options.everySeconds ?? PARAGRAPH_DEFAULTS.everySeconds;
  const pause = options.pauseSeconds ?? PARAGRAPH_DEFAULTS.pauseSeconds;
  let head: Word | null = null; // the current paragraph's first word
  let group: Word[] = [];
  let lastEnd = 0;
  let labelled = false;
  let lastSpeaker: string | null = null;
  for (const word of words) {
    if (!word.text.trim()) continue;
    if (head && (word.speaker !== head.speaker || word.start - head.start >= every || word.start - lastEnd >= pause)) {
      yield paragraphOf(head, lastEnd, labelled, group);
      head = null;
    }
    if (!head) {
      labelled = word.speaker !== null && (group.length === 0 || word.speaker !== lastSpeaker);
      lastSpeaker = word.speaker;
      head = word;
      group = [];
    }
    group.push(word);
    lastEnd = word.end;
  }
  if (head) yield paragraphOf(head, lastEnd, labelled, group);
}

const paragraphOf = (head: Word, end: number, labelled: boolean, words: readonly Word[]): Paragraph =>
  new WordsParagraph(head.start, end, head.speaker, labelled ? head.speaker : null, words);

/** A class for its `text` getter on the prototype: an object literal with a getter is slower to make than the join it saves. */
class WordsParagraph implements Paragraph {
  constructor(
    readonly start: number,
    readonly end: number,
    readonly speaker: string | null,
    readonly speakerLabel: string | null,
    readonly words: readonly Word[],
  ) {}

  get text(): string {
    return this.words.map((w) => w.text.trim()).join(' ');
  }
}

export const paragraphs = (words: readonly Word[], options: ParagraphOptions = {}): Paragraph[] => [...eachParagraph(words, options)];
