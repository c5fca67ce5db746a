import { clipSpans, compositionDuration, compositionRangesOf as rangesPlaying, mediaAt, ms, type Clip } from '../edl';
import type { TimeRange } from './edits';

/**
 * Media time ↔ composition time for the agent tools (issue 20), on edl.ts's mapping: composition
 * time is the clips laid end to end; a clip plays media [in, out). One media instant can play
 * several times (a clip duplicated) or never (cut), so the media → composition direction answers
 * a list.
 */

/** What plays at composition time `t`: the clip's index, its media and the media time; null outside [0, duration). */
export function mediaTimeAt(clips: readonly Clip[], t: number): { clip: number; media: string; time: number } | null {
  return t >= compositionDuration(clips) ? null : mediaAt(clips, t);
}

/** The composition times at which media time `t` of `media` plays, in composition order. */
export function compositionTimesOf(clips: readonly Clip[], media: string, t: number): number[] {
  const spans = clipSpans(clips);
  return clips.flatMap((c, i) => (c.media === media && t >= c.in && t < c.out ? [ms(spans[i].start + (t - c.in))] : []));
}

/** The composition ranges where media range `range` of `media` plays, in composition order, merged. */
export const compositionRangesOf = (clips: readonly Clip[], media: string, range: TimeRange): TimeRange[] =>
  mergeRanges(rangesPlaying(clips, media, range.from, range.to));

/** Sorted, overlapping or touching ranges joined, each clamped to [0, `duration`] when given, empty ones dropped. */
export function mergeRanges(ranges: readonly TimeRange[], duration = Infinity): TimeRange[] {
  const clamped = ranges
    .map((r) => ({ from: ms(Math.max(0, r.from)), to: ms(Math.min(duration, r.to)) }))
    .filter((r) => r.to > r.from)
    .sort((a, b) => a.from - b.from);
  const merged: TimeRange[] = [];
  for (const r of clamped) {
    const last = merged[merged.length - 1];
    if (last && r.from <= last.to) merged[merged.length - 1] = { from: last.from, to: Math.max(last.to, r.to) };
    else merged.push(r);
  }
  return merged;
}

/** Seconds covered by ranges that do not overlap (as `mergeRanges` returns them). */
export const totalSeconds = (ranges: readonly TimeRange[]): number => ms(ranges.reduce((sum, r) => sum + (r.to - r.from), 0));

/** The ranges within a composition of these clips, merged: what a cut of `ranges` really removes. */
export const rangesWithin = (clips: readonly Clip[], ranges: readonly TimeRange[]): TimeRange[] =>
  mergeRanges(ranges, compositionDuration(clips));
