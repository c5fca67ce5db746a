import type { Word } from '../../../lib/domain/edl';

/**
 * A composition's derived words grouped for reading: a new paragraph where the speaker changes,
 * after a pause, or when the current one has run for `everySeconds`, so each paragraph's timecode
 * is never far from its words. The speaker is named only where it changes, as the transcript
 * export does by default (`include_speaker_labels: changes`).
 */

export type Paragraph = {
  readonly start: number;
  /** Set on the first paragraph of each run of one speaker; null when unchanged or unknown. */
  readonly speakerLabel: string | null;
  readonly text: string;
};

export type ParagraphOptions = { everySeconds?: number; pauseSeconds?: number };

export function paragraphs(words: readonly Word[], options: ParagraphOptions = {}): Paragraph[] {
  const every = options.everySeconds ?? 30;
  const pause = options.pauseSeconds ?? 2;
  const out: Paragraph[] = [];
  let current: { start: number; speaker: string | null; labelled: boolean; texts: string[] } | null = null;
  let lastEnd = 0;
  let lastSpeaker: string | null = null;
  const flush = () => {
    if (current && current.texts.length) {
      out.push({ start: current.start, speakerLabel: current.labelled ? current.speaker : null, text: current.texts.join(' ') });
    }
  };
  for (const word of words) {
    const text = word.text.trim();
    if (!text) continue;
    const speakerChanged = current !== null && word.speaker !== current.speaker;
    if (!current || speakerChanged || word.start - current.start >= every || word.start - lastEnd >= pause) {
      flush();
      const labelled = word.speaker !== null && (out.length === 0 || word.speaker !== lastSpeaker);
      current = { start: word.start, speaker: word.speaker, labelled, texts: [] };
      lastSpeaker = word.speaker;
    }
    current.texts.push(text);
    lastEnd = word.end;
  }
  flush();
  return out;
}
