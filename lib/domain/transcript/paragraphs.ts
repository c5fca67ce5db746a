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

/** Lazily, so a one-hour transcript is never held as paragraphs and text at once. */
export function* eachParagraph(words: Iterable<Word>, options: ParagraphOptions = {}): Generator<Paragraph> {
  const every = options.everySeconds ?? PARAGRAPH_DEFAULTS.everySeconds;
  const pause = options.pauseSeconds ?? PARAGRAPH_DEFAULTS.pauseSeconds;
  let current: { start: number; speaker: string | null; labelled: boolean; words: Word[] } | null = null;
  let lastEnd = 0;
  let lastSpeaker: string | null = null;
  let first = true;
  const close = (c: NonNullable<typeof current>): Paragraph => ({
    start: c.start,
    end: lastEnd,
    speaker: c.speaker,
    speakerLabel: c.labelled ? c.speaker : null,
    words: c.words,
    text: c.words.map((w) => w.text.trim()).join(' '),
  });
  for (const word of words) {
    if (!word.text.trim()) continue;
    const speakerChanged = current !== null && word.speaker !== current.speaker;
    if (!current || speakerChanged || word.start - current.start >= every || word.start - lastEnd >= pause) {
      if (current) yield close(current);
      const labelled = word.speaker !== null && (first || word.speaker !== lastSpeaker);
      current = { start: word.start, speaker: word.speaker, labelled, words: [] };
      lastSpeaker = word.speaker;
      first = false;
    }
    current.words.push(word);
    lastEnd = word.end;
  }
  if (current) yield close(current);
}

export const paragraphs = (words: readonly Word[], options: ParagraphOptions = {}): Paragraph[] => [...eachParagraph(words, options)];
