import type { FramedClip, FramedTimeline, Rate } from './model';

/**
 * OpenTimelineIO JSON (`.otio`): a `Timeline.1` whose `Stack.1` holds, per lane (a multitrack
 * sequence's track k is lane k; everything else lane 0), an audio track `A<k+1>` when the lane
 * sounds and a video track `V<k+1>` when it shows a picture. Each track has a `Clip.2` per clip
 * of its lane with that stream and a `Gap.1` everywhere else, so every track adds up to the
 * timeline's length. Video tracks are stacked with lane 0 last, on top (OTIO composites later
 * children over earlier ones), so the first video track is the one seen, as the renderer shows
 * it. A clip's media is an `ExternalReference.1` to its stable file name; its `source_range` is in
 * frames of its media's rate. Markers (`Marker.2`) sit on the stack, in timeline time.
 */

const time = (value: number, r: Rate) => ({ OTIO_SCHEMA: 'RationalTime.1', rate: r.num / r.den, value });
const range = (start: number, duration: number, r: Rate) => ({
  OTIO_SCHEMA: 'TimeRange.1',
  start_time: time(start, r),
  duration: time(duration, r),
});

function clip(c: FramedClip) {
  const m = c.media;
  const available =
    m.duration === null
      ? null
      : range(0, Math.max(c.sourceOut, Math.round((m.duration * c.sourceRate.num) / c.sourceRate.den)), c.sourceRate);
  return {
    OTIO_SCHEMA: 'Clip.2',
    name: m.file,
    source_range: range(c.sourceIn, c.sourceOut - c.sourceIn, c.sourceRate),
    effects: [],
    markers: [],
    enabled: true,
    metadata: {},
    media_references: {
      DEFAULT_MEDIA: {
        OTIO_SCHEMA: 'ExternalReference.1',
        name: m.file,
        target_url: encodeURI(m.file),
        available_range: available,
        metadata: {},
      },
    },
    active_media_reference_key: 'DEFAULT_MEDIA',
  };
}

const gap = (frames: number, r: Rate) => ({
  OTIO_SCHEMA: 'Gap.1',
  name: '',
  source_range: range(0, frames, r),
  effects: [],
  markers: [],
  enabled: true,
  metadata: {},
});

type Kind = 'Video' | 'Audio';

const plays = (c: FramedClip, kind: Kind): boolean => (kind === 'Video' ? c.media.has_video : c.media.has_audio);

/** Lane `lane`'s clips of `kind`, with gaps before, between and after them up to the timeline's length. */
function track(t: FramedTimeline, kind: Kind, lane: number) {
  const children: object[] = [];
  let at = 0;
  for (const c of t.clips.filter((c) => c.lane === lane && plays(c, kind))) {
    if (c.recordIn > at) children.push(gap(c.recordIn - at, t.rate));
    children.push(clip(c));
    at = c.recordOut;
  }
  if (t.length > at) children.push(gap(t.length - at, t.rate));
  return {
    OTIO_SCHEMA: 'Track.1',
    name: `${kind[0]}${lane + 1}`,
    kind,
    source_range: null,
    effects: [],
    markers: [],
    enabled: true,
    metadata: {},
    children,
  };
}

/** The lanes that have a clip of `kind`, ascending. */
const lanesOf = (t: FramedTimeline, kind: Kind): number[] =>
  [...new Set(t.clips.filter((c) => plays(c, kind)).map((c) => c.lane))].sort((a, b) => a - b);

export function toOtio(t: FramedTimeline): string {
  // An audio track for lane 0 always: an empty or silent composition is still a timeline with a track.
  const audioLanes = [...new Set([0, ...lanesOf(t, 'Audio')])].sort((a, b) => a - b);
  const tracks = [
    ...lanesOf(t, 'Video')
      .reverse()
      .map((lane) => track(t, 'Video', lane)),
    ...audioLanes.map((lane) => track(t, 'Audio', lane)),
  ];
  const markers = t.markers.map((m) => ({
    OTIO_SCHEMA: 'Marker.2',
    name: m.label,
    color: 'RED',
    comment: '',
    marked_range: range(m.frame, 0, t.rate),
    metadata: {},
  }));
  const timeline = {
    OTIO_SCHEMA: 'Timeline.1',
    name: t.name,
    global_start_time: time(0, t.rate),
    metadata: {},
    tracks: {
      OTIO_SCHEMA: 'Stack.1',
      name: 'tracks',
      source_range: null,
      effects: [],
      markers,
      enabled: true,
      metadata: {},
      children: tracks,
    },
  };
  return `${JSON.stringify(timeline, null, 2)}\n`;
}
