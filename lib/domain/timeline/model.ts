import type { Clip, Marker } from '../edl';
import { invalidInput } from '../errors';

/**
 * What every timeline format (FCPXML, CMX 3600 EDL, OpenTimelineIO) is written from: a
 * composition's clips cut into frames. A clip's source points are frames of its media's rate; its
 * record points are frames of the timeline's rate, laid end to end, each clip as long as its media
 * span rounded to whole frames at both ends, so every format agrees with every other to the frame.
 */

/** A frame rate as a fraction (30000/1001 for NTSC's 29.97). */
export type Rate = { readonly num: number; readonly den: number };

/**
 * Unknown rates (audio-only projects, media imported before frame rates were probed) are PAL's
 * 25 fps: a whole number, so non-drop timecode is exact and every millisecond time of the
 * composition lands within half a frame.
 */
export const DEFAULT_RATE: Rate = { num: 25, den: 1 };

/** A media file of the project, as an export needs it. */
export type TimelineMedia = {
  readonly ref: string;
  /** Its stable file name in exports and bundles (`stableFileNames`). */
  readonly file: string;
  /** Seconds; null when unknown (an image). */
  readonly duration: number | null;
  readonly has_video: boolean;
  readonly has_audio: boolean;
  /** Its video frame rate when probed; null otherwise (the timeline's rate is used). */
  readonly rate: Rate | null;
};

export type TimelineInput = {
  readonly name: string;
  readonly width: number;
  readonly height: number;
  readonly clips: readonly Clip[];
  readonly markers: readonly Marker[];
  readonly media: ReadonlyMap<string, TimelineMedia>;
};

export type FramedClip = {
  readonly media: TimelineMedia;
  /** Source frames [in, out) at `sourceRate`. */
  readonly sourceIn: number;
  readonly sourceOut: number;
  readonly sourceRate: Rate;
  /** Record frames [in, out) at the timeline's rate. */
  readonly recordIn: number;
  readonly recordOut: number;
};

export type FramedMarker = { readonly frame: number; readonly label: string };

export type FramedTimeline = {
  readonly name: string;
  readonly width: number;
  readonly height: number;
  readonly rate: Rate;
  readonly clips: readonly FramedClip[];
  readonly markers: readonly FramedMarker[];
  /** Frames of the whole timeline. */
  readonly length: number;
  readonly hasVideo: boolean;
};

export const fps = (r: Rate): number => r.num / r.den;
/** The nearest frame to a time in seconds. */
export const frameAt = (seconds: number, r: Rate): number => Math.round((seconds * r.num) / r.den);

/** The timeline's rate: the first video media's with a known rate, else the default. */
export function timelineRate(input: TimelineInput): Rate {
  for (const c of input.clips) {
    const m = input.media.get(c.media);
    if (m?.has_video && m.rate) return m.rate;
  }
  return DEFAULT_RATE;
}

/** The composition in frames. Every clip's media must be in `media` (a sequence is refused by the caller). */
export function frameTimeline(input: TimelineInput): FramedTimeline {
  const rate = timelineRate(input);
  const clips: FramedClip[] = [];
  let record = 0;
  for (const c of input.clips) {
    const media = input.media.get(c.media);
    if (!media) throw invalidInput(`clip media ${JSON.stringify(c.media)} is not a media file of the project`);
    const sourceRate = media.rate ?? rate;
    const length = frameAt(c.out, rate) - frameAt(c.in, rate);
    if (length <= 0) continue; // shorter than half a frame: nothing an editor could show
    clips.push({
      media,
      sourceIn: frameAt(c.in, sourceRate),
      sourceOut: frameAt(c.in, sourceRate) + sourceLength(length, rate, sourceRate),
      sourceRate,
      recordIn: record,
      recordOut: record + length,
    });
    record += length;
  }
  return {
    name: input.name,
    width: input.width,
    height: input.height,
    rate,
    clips,
    markers: frameMarkers(input, rate, record),
    length: record,
    hasVideo: clips.some((c) => c.media.has_video),
  };
}

/** Source frames as long as `length` record frames (the same number when the rates agree). */
const sourceLength = (length: number, rate: Rate, sourceRate: Rate): number =>
  rate.num === sourceRate.num && rate.den === sourceRate.den ? length : Math.round((length * fps(sourceRate)) / fps(rate));

/** Markers at their frame in the timeline; one at the very end moves onto the last frame, where editors can show it. */
function frameMarkers(input: TimelineInput, rate: Rate, length: number): FramedMarker[] {
  const last = Math.max(0, length - 1);
  return input.markers.map((m) => ({ frame: Math.min(frameAt(m.time, rate), last), label: m.label }));
}
