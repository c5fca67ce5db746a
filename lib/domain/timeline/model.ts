import type { Clip, Marker } from '../edl';
import { invalidInput } from '../errors';
import type { SequenceTrack } from '../import';

/**
 * What every timeline format (FCPXML, CMX 3600 EDL, OpenTimelineIO) is written from: a
 * composition's clips cut into frames. A clip's source points are frames of its media's rate; its
 * record points are frames of the timeline's rate, laid end to end, each clip as long as its media
 * span rounded to whole frames at both ends, so every format agrees with every other to the frame.
 * A clip of a multitrack sequence becomes one framed clip per track that sounds in it, each on its
 * own lane (the track's index), as the renderer mixes them.
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
  /** The media files the clips (or their sequences' tracks) play. */
  readonly media: ReadonlyMap<string, TimelineMedia>;
  /** The multitrack sequences the clips play: their tracks, each a file of `media` from its offset in seconds. */
  readonly sequences: ReadonlyMap<string, readonly SequenceTrack[]>;
};

export type FramedClip = {
  readonly media: TimelineMedia;
  /** 0 for a plain clip and a sequence's first track; k for a sequence's track k. */
  readonly lane: number;
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
  /** In record order; clips that start together in lane order. */
  readonly clips: readonly FramedClip[];
  readonly markers: readonly FramedMarker[];
  /** Frames of the whole timeline. */
  readonly length: number;
  readonly hasVideo: boolean;
};

export const fps = (r: Rate): number => r.num / r.den;
/** The nearest frame to a time in seconds. */
export const frameAt = (seconds: number, r: Rate): number => Math.round((seconds * r.num) / r.den);

/** The timeline's rate: the first video file with a known rate that a clip plays (a sequence: any of its tracks), else the default. */
export function timelineRate(input: TimelineInput): Rate {
  for (const c of input.clips) {
    const refs = input.sequences.get(c.media)?.map((t) => t.media) ?? [c.media];
    for (const ref of refs) {
      const m = input.media.get(ref);
      if (m?.has_video && m.rate) return m.rate;
    }
  }
  return DEFAULT_RATE;
}

/**
 * The composition in frames. Every clip's media, and every track of a sequence it plays, must be
 * in `media`. A clip's record frames are its edges in composition time, each rounded to the
 * nearest frame (as the render and the markers round them), not its length rounded and added up:
 * forty clips of 0.05 s made 40 frames (1.6 s at 25 fps) of a 2 s composition, and every cut
 * moved what followed by up to half a frame more.
 */
export function frameTimeline(input: TimelineInput): FramedTimeline {
  const rate = timelineRate(input);
  const clips: FramedClip[] = [];
  let time = 0; // the clip's start in composition time, seconds
  let record = 0;
  for (const c of input.clips) {
    const start = time;
    time += c.out - c.in;
    const recordOut = frameAt(time, rate);
    const length = recordOut - record;
    if (length <= 0) continue; // within half a frame: nothing an editor could show
    const tracks = input.sequences.get(c.media);
    if (tracks) clips.push(...frameSequenceClip(input, c, tracks, rate, { start, record, recordOut }));
    else clips.push(framePlainClip(mediaOf(input, c.media), c, rate, record, length));
    record = recordOut;
  }
  clips.sort((a, b) => a.recordIn - b.recordIn || a.lane - b.lane);
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

function mediaOf(input: TimelineInput, ref: string): TimelineMedia {
  const media = input.media.get(ref);
  if (!media) throw invalidInput(`clip media ${JSON.stringify(ref)} is not a media file of the project`);
  return media;
}

function framePlainClip(media: TimelineMedia, c: Clip, rate: Rate, record: number, length: number): FramedClip {
  const sourceRate = media.rate ?? rate;
  const sourceFrames = sourceLength(length, rate, sourceRate);
  // The record's rounding may lengthen the clip by a frame: start it earlier rather than past the media's end.
  const lastFrame = media.duration === null ? Infinity : frameAt(media.duration, sourceRate);
  const sourceIn = Math.max(0, Math.min(frameAt(c.in, sourceRate), lastFrame - sourceFrames));
  return {
    media,
    lane: 0,
    sourceIn,
    sourceOut: sourceIn + sourceFrames,
    sourceRate,
    recordIn: record,
    recordOut: record + length,
  };
}

/**
 * A sequence clip [in, out) of sequence time, placed at record frame `record`: track k plays its
 * own media over [in - offset, out - offset] clamped to [0, its duration], so it starts later in
 * the record when it starts inside the clip and ends early when its media does. Sequence times
 * round to frames as the clip's edges do (a frame of the record is a frame of the sequence), and
 * a track's source starts at the nearest frame of its own rate. Images are not tracks the
 * renderer plays, so they are left out here too.
 */
function frameSequenceClip(
  input: TimelineInput,
  c: Clip,
  tracks: readonly SequenceTrack[],
  rate: Rate,
  at: { readonly start: number; readonly record: number; readonly recordOut: number },
): FramedClip[] {
  // A time of the sequence, as a frame of the record: where it falls in composition time, within the clip's frames.
  const recordOf = (sequenceTime: number) => Math.min(at.recordOut, Math.max(at.record, frameAt(at.start + sequenceTime - c.in, rate)));
  const framed: FramedClip[] = [];
  tracks.forEach((t, lane) => {
    const media = mediaOf(input, t.media);
    if (media.duration === null) return;
    const [from, to] = [Math.max(c.in, t.offset), Math.min(c.out, t.offset + media.duration)];
    const sourceRate = media.rate ?? rate;
    const sourceIn = frameAt(from - t.offset, sourceRate);
    const [recordIn, recordOut] = [recordOf(from), recordOf(to)];
    // Frames round on their own at each end: never past the media's last frame.
    const lastFrame = frameAt(media.duration, sourceRate);
    let length = recordOut - recordIn;
    while (length > 0 && sourceIn + sourceLength(length, rate, sourceRate) > lastFrame) length--;
    if (length <= 0) return; // the track has not started yet, or has ended, by this clip
    framed.push({
      media,
      lane,
      sourceIn,
      sourceOut: sourceIn + sourceLength(length, rate, sourceRate),
      sourceRate,
      recordIn,
      recordOut: recordIn + length,
    });
  });
  return framed;
}

/** Source frames as long as `length` record frames (the same number when the rates agree). */
const sourceLength = (length: number, rate: Rate, sourceRate: Rate): number =>
  rate.num === sourceRate.num && rate.den === sourceRate.den ? length : Math.round((length * fps(sourceRate)) / fps(rate));

/** Markers at their frame in the timeline; one at the very end moves onto the last frame, where editors can show it. */
function frameMarkers(input: TimelineInput, rate: Rate, length: number): FramedMarker[] {
  const last = Math.max(0, length - 1);
  return input.markers.map((m) => ({ frame: Math.min(frameAt(m.time, rate), last), label: m.label }));
}
