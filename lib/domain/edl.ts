import type { SequenceTrack } from './import';

/**
 * Edit decision lists (DESIGN §4): pure operations on a composition's clips and markers, and the
 * transcript derived from them. Composition time is the clips laid end to end; clip `in`/`out`
 * are media seconds. Every time these functions compute is rounded to milliseconds, so a long
 * chain of cuts never accumulates float dust, and a piece shorter than 1 ms is dropped.
 *
 * These functions are part of the meaning of the composition events (an event carries the edit,
 * not the resulting list), so changing what one of them does changes how history replays.
 */

export type Clip = { readonly media: string; readonly in: number; readonly out: number };
export type Marker = { readonly time: number; readonly label: string };
/** A transcribed word, in media time (in composition time once derived). */
export type Word = {
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly confidence: number;
  readonly speaker: string | null;
};

export const MIN_CLIP_SECONDS = 0.001;

/** Rounds to milliseconds; `+ 0` turns -0 into 0 (deepEqual and Avro tell them apart). */
export const ms = (seconds: number): number => Math.round(seconds * 1000) / 1000 + 0;

const lengthOf = (c: Clip): number => ms(c.out - c.in);

// ---------------------------------------------------------------- timeline

/** Duration of a composition: its clips laid end to end. */
export const compositionDuration = (clips: readonly Clip[]): number => ms(clips.reduce((sum, c) => sum + (c.out - c.in), 0));

/** Where each clip starts and ends in composition time. */
export function clipSpans(clips: readonly Clip[]): { start: number; end: number }[] {
  let t = 0;
  return clips.map((c) => {
    const start = t;
    t = ms(t + c.out - c.in);
    return { start, end: t };
  });
}

/** `video` when any clip's media has video (for a sequence, the caller answers for its tracks). */
export const compositionMediaType = (clips: readonly Clip[], hasVideo: (media: string) => boolean): 'video' | 'audio' =>
  clips.some((c) => hasVideo(c.media)) ? 'video' : 'audio';

// ---------------------------------------------------------------- clip edits

/** The part of `c` between `from` and `to`, seconds into the clip; null when under 1 ms. */
function piece(c: Clip, from: number, to: number): Clip | null {
  const p = { media: c.media, in: ms(c.in + from), out: ms(c.in + to) };
  return lengthOf(p) >= MIN_CLIP_SECONDS ? p : null;
}
const present = <T>(x: T | null): x is T => x !== null;

/** Removes composition time [from, to), splitting the clips at its edges. */
export function cutRange(clips: readonly Clip[], from: number, to: number): Clip[] {
  const spans = clipSpans(clips);
  return clips.flatMap((c, i) => {
    const { start, end } = spans[i];
    if (end <= from || start >= to) return [c];
    return [start < from ? piece(c, 0, from - start) : null, end > to ? piece(c, to - start, end - start) : null].filter(present);
  });
}

/** Keeps only composition time [from, to), splitting the clips at its edges. */
export function keepRange(clips: readonly Clip[], from: number, to: number): Clip[] {
  const spans = clipSpans(clips);
  return clips.flatMap((c, i) => {
    const { start, end } = spans[i];
    if (end <= from || start >= to) return [];
    if (start >= from && end <= to) return [c];
    return [piece(c, Math.max(from, start) - start, Math.min(to, end) - start)].filter(present);
  });
}

/** Inserts `added` at composition time `time`, splitting the clip playing there. */
export function insertClips(clips: readonly Clip[], time: number, added: readonly Clip[]): Clip[] {
  const spans = clipSpans(clips);
  const at = spans.findIndex((s) => s.end > time);
  if (at === -1) return [...clips, ...added];
  const { start, end } = spans[at];
  const c = clips[at];
  const split = time > start ? [piece(c, 0, time - start), ...added, piece(c, time - start, end - start)].filter(present) : [...added, c];
  return [...clips.slice(0, at), ...split, ...clips.slice(at + 1)];
}

export const removeClips = (clips: readonly Clip[], indexes: readonly number[]): Clip[] => {
  const removed = new Set(indexes);
  return clips.filter((_, i) => !removed.has(i));
};

/** `order` is a permutation of the clip indexes: the new list is `order.map(i => clips[i])`. */
export const reorderClips = (clips: readonly Clip[], order: readonly number[]): Clip[] => order.map((i) => clips[i]);

// ---------------------------------------------------------------- markers

/** Adds a marker after those at the same time or earlier, so markers stay sorted by time. */
export function addMarker(markers: readonly Marker[], marker: Marker): Marker[] {
  const at = markers.findIndex((m) => m.time > marker.time);
  return at === -1 ? [...markers, marker] : [...markers.slice(0, at), marker, ...markers.slice(at)];
}

/**
 * Markers after cutting [from, to): those strictly inside go, later ones move left. A marker on
 * either edge survives at the join, so cutting a word next to a marker keeps the marker.
 */
export const cutMarkers = (markers: readonly Marker[], from: number, to: number): Marker[] =>
  markers.filter((m) => m.time <= from || m.time >= to).map((m) => (m.time >= to ? { ...m, time: ms(m.time - (to - from)) } : m));

/** Markers after keeping [from, to]: those outside go, the rest move left by `from`. */
export const keepMarkers = (markers: readonly Marker[], from: number, to: number): Marker[] =>
  markers.filter((m) => m.time >= from && m.time <= to).map((m) => ({ ...m, time: ms(m.time - from) }));

/** Markers after inserting `seconds` at `time`: a marker at or after it marks content that moves. */
export const insertMarkers = (markers: readonly Marker[], time: number, seconds: number): Marker[] =>
  markers.map((m) => (m.time >= time ? { ...m, time: ms(m.time + seconds) } : m));

/** Markers after removing clips: each removed clip's span is cut, last first so spans stay valid. */
export function removeClipMarkers(clips: readonly Clip[], markers: readonly Marker[], indexes: readonly number[]): Marker[] {
  const spans = clipSpans(clips);
  let out = [...markers];
  for (const i of [...new Set(indexes)].sort((a, b) => b - a)) out = cutMarkers(out, spans[i].start, spans[i].end);
  return out;
}

/**
 * Markers after reordering: a marker labels content, so it moves with the clip it falls in (the
 * clip starting at its time; one at the very end stays with the last clip).
 */
export function reorderMarkers(clips: readonly Clip[], markers: readonly Marker[], order: readonly number[]): Marker[] {
  if (clips.length === 0) return [...markers];
  const before = clipSpans(clips);
  const after = clipSpans(reorderClips(clips, order));
  const positionOf = new Map(order.map((clip, position) => [clip, position]));
  const moved = markers.map((m) => {
    const found = before.findIndex((s) => m.time < s.end);
    const i = found === -1 ? clips.length - 1 : found;
    return { ...m, time: ms(after[positionOf.get(i)!].start + (m.time - before[i].start)) };
  });
  return moved.sort((a, b) => a.time - b.time); // stable: equal times keep their order
}

// ---------------------------------------------------------------- transcript

const byStart = (a: Word, b: Word): number => a.start - b.start;

/**
 * The composition's transcript, derived from its clips (DESIGN §4): each clip contributes the
 * words of its media whose midpoint lies in [in, out), clamped to the clip and shifted to
 * composition time. The midpoint rule puts a word that straddles a split on exactly one side, so
 * splitting a clip anywhere never loses or duplicates a word; clamping keeps a clip's words
 * inside its span, so the transcript stays in order across clip boundaries.
 */
export function compositionTranscript(clips: readonly Clip[], wordsOf: (media: string) => readonly Word[] | undefined): Word[] {
  const spans = clipSpans(clips);
  return clips.flatMap((c, i) => {
    const shift = spans[i].start - c.in;
    return (wordsOf(c.media) ?? [])
      .filter((w) => (w.start + w.end) / 2 >= c.in && (w.start + w.end) / 2 < c.out)
      .map((w) => ({ ...w, start: ms(Math.max(w.start, c.in) + shift), end: ms(Math.min(w.end, c.out) + shift) }))
      .sort(byStart);
  });
}

/**
 * The words of a multitrack sequence in sequence time: each track's words shifted by its offset,
 * its speaker the track's label (by default the track's media reference), merged by start time.
 */
export function sequenceWords(
  tracks: readonly SequenceTrack[],
  wordsOf: (media: string) => readonly Word[] | undefined,
  speakerOf: (track: number, media: string) => string = (_track, media) => media,
): Word[] {
  const words = tracks.flatMap((t, i) =>
    (wordsOf(t.media) ?? []).map((w) => ({
      ...w,
      start: ms(w.start + t.offset),
      end: ms(w.end + t.offset),
      speaker: speakerOf(i, t.media),
    })),
  );
  return words.sort(byStart); // stable: simultaneous words keep track order
}
