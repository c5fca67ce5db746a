import type { Marker, Word } from '../edl';
import { eachParagraph, type ParagraphOptions } from './paragraphs';

/**
 * What a transcript export shows, independent of its file format: paragraphs with their speaker
 * label and timecodes, and markers between them, in composition order. Each format renders these
 * blocks as they come, so an export never holds its whole text.
 */

export type SpeakerLabels = 'off' | 'changes' | 'every_paragraph';

/** The request's `timecodes`, present: timecodes are on. */
export type TimecodeOptions = {
  /** An inline timecode before the first word at or after every multiple of this many seconds. */
  readonly frequencySeconds: number | null;
  readonly onParagraphs: boolean;
  /** On the paragraphs where the speaker changes (implied by `onParagraphs`). */
  readonly onSpeakers: boolean;
  readonly onMarkers: boolean;
  /** Added to every time shown (a programme that starts at 01:00:00). */
  readonly offsetSeconds: number;
};

export type TranscriptOptions = {
  readonly speakerLabels: SpeakerLabels;
  readonly markers: boolean;
  readonly timecodes: TimecodeOptions | null;
  readonly paragraphs?: ParagraphOptions;
};

/** A piece of a paragraph's text: words, or a timecode (seconds, offset applied) between them. */
export type Span = { readonly text: string } | { readonly timecode: number };

export type Block =
  | {
      readonly kind: 'paragraph';
      /** Seconds with the offset applied; null when no timecode is shown at its start. */
      readonly timecode: number | null;
      readonly speaker: string | null;
      readonly spans: readonly Span[];
    }
  | { readonly kind: 'marker'; readonly timecode: number | null; readonly label: string };

export const DEFAULT_TRANSCRIPT_OPTIONS: TranscriptOptions = { speakerLabels: 'changes', markers: false, timecodes: null };

/** The blocks of a transcript: a marker comes before the paragraph that starts at or after it. */
export function* transcriptBlocks(words: Iterable<Word>, markers: readonly Marker[], options: TranscriptOptions): Generator<Block> {
  const shown = options.markers ? [...markers].sort((a, b) => a.time - b.time) : [];
  const tc = options.timecodes;
  const at = (seconds: number) => (tc ? Math.max(0, seconds + tc.offsetSeconds) : 0);
  let m = 0;
  const markerBlock = (marker: Marker): Block => ({
    kind: 'marker',
    timecode: tc?.onMarkers ? at(marker.time) : null,
    label: marker.label,
  });
  let nextTick = tc?.frequencySeconds ? 0 : Infinity;
  for (const p of eachParagraph(words, options.paragraphs)) {
    while (m < shown.length && shown[m].time <= p.start) yield markerBlock(shown[m++]);
    const speakerChanged = p.speakerLabel !== null;
    const stamped = !!tc && (tc.onParagraphs || (tc.onSpeakers && speakerChanged));
    if (stamped) nextTick = advance(nextTick, p.start, tc.frequencySeconds);
    const spans: Span[] = [];
    let text = '';
    for (let i = 0; i < p.words.length; i++) {
      const w = p.words[i];
      if (w.start >= nextTick) {
        if (text) spans.push({ text });
        text = '';
        spans.push({ timecode: at(w.start) });
        nextTick = advance(nextTick, w.start, tc!.frequencySeconds);
      }
      text += text ? ` ${w.text.trim()}` : w.text.trim();
    }
    if (text) spans.push({ text });
    yield {
      kind: 'paragraph',
      timecode: stamped ? at(p.start) : null,
      speaker: labelOf(options.speakerLabels, p.speaker, speakerChanged),
      spans,
    };
  }
  while (m < shown.length) yield markerBlock(shown[m++]);
}

/** The next multiple of `every` after `time` (a timecode just shown covers the ticks up to it). */
const advance = (tick: number, time: number, every: number | null): number =>
  every ? Math.max(tick, (Math.floor(time / every) + 1) * every) : Infinity;

function labelOf(mode: SpeakerLabels, speaker: string | null, changed: boolean): string | null {
  switch (mode) {
    case 'off':
      return null;
    case 'changes':
      return changed ? speaker : null;
    case 'every_paragraph':
      return speaker;
    default: {
      const never: never = mode;
      return never;
    }
  }
}

/** Control characters and line breaks in a name or a word would break a format's lines: spaces instead. */
export const oneLine = (text: string) => text.replace(/[\p{Cc}\u2028\u2029]+/gu, ' ');

/** `HH:MM:SS`, the timecode the text formats show. */
export function clockTime(seconds: number): string {
  const s = Math.floor(Math.max(0, seconds) + 1e-6);
  return `${two(Math.floor(s / 3600))}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}`;
}

/** `HH:MM:SS,mmm`, SubRip's. */
export function subripTime(seconds: number): string {
  const total = Math.round(Math.max(0, seconds) * 1000);
  const ms = total % 1000;
  const h = Math.floor(total / 3_600_000);
  return `${two(h)}:${two(Math.floor(total / 60_000) % 60)}:${two(Math.floor(total / 1000) % 60)},${ms < 100 ? (ms < 10 ? '00' : '0') : ''}${ms}`;
}

/**
 * Two digits at least, from a table: an SRT export formats two times per cue, thousands per
 * hour, and `String(n).padStart` made a quarter of its time.
 */
const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, '0'));
const two = (n: number): string => TWO_DIGITS[n] ?? String(n);
