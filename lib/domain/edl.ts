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

/**
 * Where each clip ends in composition time, in whole milliseconds, remembered per clip list. Every
 * time here is a millisecond (see `ms`), so integer sums give exactly the doubles the chain of
 * rounded additions in `clipSpans` gives, without walking the list: folding thousands of cuts of
 * a long composition costs a binary search and two array copies per cut instead of a new object
 * per clip (20,000 cuts folded in 50 s before). A cache, not state: the lists are never mutated.
 */
const endsByList = new WeakMap<readonly Clip[], Float64Array>();

function endsMs(clips: readonly Clip[]): Float64Array {
  let ends = endsByList.get(clips);
  if (!ends) {
    ends = new Float64Array(clips.length);
    let t = 0;
    clips.forEach((c, i) => (ends![i] = t += Math.round(c.out * 1000) - Math.round(c.in * 1000)));
    endsByList.set(clips, ends);
  }
  return ends;
}

/** The first index below `n` whose end (ms) is above `t`, or `n` when none. */
function firstEndAbove(ends: Float64Array, n: number, t: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ends[mid] > t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

const lengthMs = (c: Clip): number => Math.round(c.out * 1000) - Math.round(c.in * 1000);

/**
 * What cutting [from, to) does to the first `n` clips, the first starting at `base` ms: clips
 * [first, last) become `middle` (their kept ends).
 */
function planCut(clips: readonly Clip[], ends: Float64Array, n: number, from: number, to: number, base = 0) {
  const [f, t] = [Math.round(from * 1000), Math.round(to * 1000)];
  const startOf = (i: number) => (i === 0 ? base : ends[i - 1]) / 1000;
  const first = firstEndAbove(ends, n, f); // the first clip ending after `from`
  let last = first; // one past the last clip starting before `to`
  while (last < n && startOf(last) * 1000 < t) last++;
  if (first >= last) return { first, last, middle: [] as Clip[] };
  const head = startOf(first) < from ? piece(clips[first], 0, from - startOf(first)) : null;
  const endLast = ends[last - 1] / 1000;
  const tail = endLast > to ? piece(clips[last - 1], to - startOf(last - 1), endLast - startOf(last - 1)) : null;
  return { first, last, middle: [head, tail].filter(present) };
}

/** Writes into `out` (from index `first`) the ends after clips [first, last) of `ends` became `middle`. */
function shiftEnds(ends: Float64Array, n: number, out: Float64Array, cut: { first: number; last: number; middle: readonly Clip[] }) {
  const { first, last, middle } = cut;
  const removedEnd = ends[last - 1];
  let t = first === 0 ? 0 : ends[first - 1];
  const middleEnds = middle.map((c) => (t += lengthMs(c)));
  const shift = removedEnd - t;
  if (out === ends) out.copyWithin(first + middle.length, last, n);
  else out.set(ends.subarray(last, n), first + middle.length);
  middleEnds.forEach((e, k) => (out[first + k] = e));
  for (let j = first + middle.length, end = n - (last - first) + middle.length; j < end; j++) out[j] -= shift;
}

/** Removes composition time [from, to), splitting the clips at its edges. */
export function cutRange(clips: readonly Clip[], from: number, to: number): Clip[] {
  const ends = endsMs(clips);
  const cut = planCut(clips, ends, clips.length, from, to);
  if (cut.first >= cut.last) return [...clips];
  const out = clips.slice(0, cut.first).concat(cut.middle, clips.slice(cut.last));
  const outEnds = new Float64Array(out.length);
  outEnds.set(ends.subarray(0, cut.first));
  shiftEnds(ends, clips.length, outEnds, cut);
  endsByList.set(out, outEnds);
  return out;
}

/** Clips per block of `cutsInPlace`: a cut rewrites one block and the blocks' starts, not the list. */
const BLOCK = 64;

type Block = { clips: Clip[]; total: number };

const blockOf = (clips: Clip[]): Block => ({ clips, total: clips.reduce((sum, c) => sum + lengthMs(c), 0) });

function blocksOf(clips: readonly Clip[]): Block[] {
  const blocks: Block[] = [];
  for (let i = 0; i < clips.length; i += BLOCK) blocks.push(blockOf(clips.slice(i, i + BLOCK)));
  return blocks;
}

/**
 * A clip list cut many times in a row: folding a long run of cuts (a composition edited
 * thousands of times) must not copy the list per cut. The list is kept in blocks of about
 * `BLOCK` clips with their start times, so a cut rewrites the block or blocks it touches (the
 * same `planCut` as `cutRange`, so the same results, cut after cut) and moves the later blocks'
 * starts. `done` hands the list over (not to be cut again).
 */
export function cutsInPlace(clips: readonly Clip[]) {
  const blocks = blocksOf(clips);
  const starts: number[] = [];
  const restart = (from: number) => {
    starts.length = blocks.length;
    for (let k = from; k < blocks.length; k++) starts[k] = k === 0 ? 0 : starts[k - 1] + blocks[k - 1].total;
  };
  restart(0);
  return {
    cut(from: number, to: number): void {
      const [f, t] = [Math.round(from * 1000), Math.round(to * 1000)];
      let lo = 0;
      let hi = blocks.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (starts[mid] + blocks[mid].total > f) hi = mid;
        else lo = mid + 1;
      }
      const bi = lo; // the first block ending after `from`
      if (bi === blocks.length) return;
      let bj = bi; // the last block starting before `to`
      while (bj + 1 < blocks.length && starts[bj + 1] < t) bj++;
      const window = bi === bj ? blocks[bi].clips : blocks.slice(bi, bj + 1).flatMap((b) => b.clips);
      const ends = new Float64Array(window.length);
      let end = starts[bi];
      window.forEach((c, i) => (ends[i] = end += lengthMs(c)));
      const cut = planCut(window, ends, window.length, from, to, starts[bi]);
      if (cut.first >= cut.last) return;
      const kept = window.slice(0, cut.first).concat(cut.middle, window.slice(cut.last));
      const replaced = kept.length <= 2 * BLOCK ? (kept.length === 0 ? [] : [blockOf(kept)]) : blocksOf(kept);
      blocks.splice(bi, bj - bi + 1, ...replaced);
      restart(bi);
    },
    done(): Clip[] {
      return blocks.flatMap((b) => b.clips);
    },
  };
}

/**
 * Removes every range at once: merged, then cut from the last to the first, so each range is
 * composition time as it was before the edit.
 */
export function cutRanges(clips: readonly Clip[], ranges: readonly TimeSpan[]): Clip[] {
  if (process.env.TRACECUT) console.trace('cutRanges');
  const merged = mergeRanges(ranges);
  if (merged.length <= 1) return merged.reduceRight<readonly Clip[]>((out, r) => cutRange(out, r.from, r.to), clips) as Clip[];
  // Many ranges (300 filler words): cut in blocks, not a copy of the whole list per range.
  const list = cutsInPlace(clips);
  for (let i = merged.length - 1; i >= 0; i--) list.cut(merged[i].from, merged[i].to);
  return list.done();
}

export type TimeSpan = { readonly from: number; readonly to: number };

/** Sorted by start, overlapping or touching ranges joined, empty ones dropped. */
export function mergeRanges(ranges: readonly TimeSpan[]): TimeSpan[] {
  const sorted = ranges.filter((r) => r.to > r.from).sort((a, b) => a.from - b.from);
  const out: TimeSpan[] = [];
  for (const r of sorted) {
    const prev = out[out.length - 1];
    if (prev && r.from <= prev.to) out[out.length - 1] = { from: prev.from, to: Math.max(prev.to, r.to) };
    else out.push({ from: r.from, to: r.to });
  }
  return out;
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

/**
 * Markers after cutting every range at once, the last range first (as `cutRanges`): what
 * `cutMarkers` range after range makes of each marker, one marker at a time (a marker's fate
 * depends on no other), so 300 ranges cost no list per range.
 */
export function cutRangesMarkers(markers: readonly Marker[], ranges: readonly TimeSpan[]): Marker[] {
  const merged = mergeRanges(ranges);
  const out: Marker[] = [];
  for (const m of markers) {
    let time = m.time;
    let removed = false;
    for (let i = merged.length - 1; i >= 0 && !removed; i--) {
      const { from, to } = merged[i];
      if (time > from && time < to) removed = true;
      else if (time >= to) time = ms(time - (to - from));
    }
    if (!removed) out.push(time === m.time ? m : { ...m, time });
  }
  return out;
}

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

// ---------------------------------------------------------------- time mapping

/** What plays at a composition time: the clip (its index), its media and the media time. */
export type MediaPoint = { readonly clip: number; readonly media: string; readonly time: number };

/**
 * The media playing at composition time `time`, or null outside [0, duration]. A time on a join
 * belongs to the clip starting there; the very end belongs to the last clip (its `out`).
 */
export function mediaAt(clips: readonly Clip[], time: number): MediaPoint | null {
  const ends = endsMs(clips);
  const t = Math.round(time * 1000);
  if (!Number.isFinite(time) || t < 0 || clips.length === 0 || t > ends[ends.length - 1]) return null;
  const i = Math.min(firstEndAbove(ends, clips.length, t), clips.length - 1);
  const start = i === 0 ? 0 : ends[i - 1];
  return { clip: i, media: clips[i].media, time: ms(clips[i].in + (t - start) / 1000) };
}

/**
 * The composition ranges where media time [from, to) of `media` plays, in composition order:
 * none when it was cut, several when it plays in several clips (split, reordered, duplicated).
 * Ranges that meet in composition time are joined (a clip split and left in place).
 */
export function compositionRangesOf(clips: readonly Clip[], media: string, from: number, to: number): TimeSpan[] {
  const ends = endsMs(clips);
  const out: TimeSpan[] = [];
  clips.forEach((c, i) => {
    if (c.media !== media) return;
    const [lo, hi] = [Math.max(from, c.in), Math.min(to, c.out)];
    if (hi <= lo) return;
    const start = (i === 0 ? 0 : ends[i - 1]) / 1000;
    const range = { from: ms(start + lo - c.in), to: ms(start + hi - c.in) };
    const prev = out[out.length - 1];
    if (prev && prev.to === range.from) out[out.length - 1] = { from: prev.from, to: range.to };
    else if (range.to > range.from) out.push(range);
  });
  return out;
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
    const words = wordsOf(c.media) ?? [];
    const [from, to] = candidates(words, c.in, c.out);
    const out: Word[] = [];
    for (let k = from; k < to; k++) {
      const w = words[k];
      const mid = (w.start + w.end) / 2;
      if (mid < c.in || mid >= c.out) continue;
      const start = ms(Math.max(w.start, c.in) + shift);
      const end = ms(Math.min(w.end, c.out) + shift);
      // A word where it was (a clip not moved, as an unedited composition's) is the word itself: no copy of an hour of words.
      out.push(start === w.start && end === w.end ? w : { ...w, start, end });
    }
    return shapeOf(words).sorted ? out : out.sort(byStart);
  });
}

/**
 * What a word list is like, worked out once per list: whether it is in start order, and its
 * longest word. A clip then looks only at the words that can have their midpoint in it (binary
 * search on start), not at the whole recording: a one-hour composition cut into 300 clips was
 * 2.7 million comparisons.
 */
const shapes = new WeakMap<readonly Word[], { readonly sorted: boolean; readonly longest: number }>();
function shapeOf(words: readonly Word[]): { readonly sorted: boolean; readonly longest: number } {
  let shape = shapes.get(words);
  if (!shape) {
    let sorted = true;
    let longest = 0;
    for (let k = 0; k < words.length; k++) {
      if (k > 0 && words[k].start < words[k - 1].start) sorted = false;
      longest = Math.max(longest, words[k].end - words[k].start);
    }
    shape = { sorted, longest };
    shapes.set(words, shape);
  }
  return shape;
}

/** Indexes [from, to) of the words that may have their midpoint in [in, out): all of them unless in start order. */
function candidates(words: readonly Word[], inAt: number, outAt: number): [number, number] {
  const { sorted, longest } = shapeOf(words);
  if (!sorted) return [0, words.length];
  // A word whose midpoint is at or after `in` starts no earlier than `in` minus its length.
  const firstAtOrAfter = (t: number) => {
    let lo = 0;
    let hi = words.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (words[mid].start < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return [firstAtOrAfter(inAt - longest), firstAtOrAfter(outAt)];
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
