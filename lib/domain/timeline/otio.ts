import type { FramedClip, FramedTimeline, Rate } from './model';

/**
 * OpenTimelineIO JSON (`.otio`): a `Timeline.1` whose `Stack.1` holds a video track (when any clip
 * has video) and an audio track, each with one `Clip.2` per clip, or a `Gap.1` where that clip has
 * no such stream, so both tracks stay in step. A clip's media is an `ExternalReference.1` to its
 * stable file name; its `source_range` is in frames of its media's rate. Markers (`Marker.2`) sit
 * on the stack, in timeline time.
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

function track(t: FramedTimeline, kind: 'Video' | 'Audio', plays: (c: FramedClip) => boolean) {
  return {
    OTIO_SCHEMA: 'Track.1',
    name: kind === 'Video' ? 'V1' : 'A1',
    kind,
    source_range: null,
    effects: [],
    markers: [],
    enabled: true,
    metadata: {},
    children: t.clips.map((c) => (plays(c) ? clip(c) : gap(c.recordOut - c.recordIn, t.rate))),
  };
}

export function toOtio(t: FramedTimeline): string {
  const tracks = [...(t.hasVideo ? [track(t, 'Video', (c) => c.media.has_video)] : []), track(t, 'Audio', (c) => c.media.has_audio)];
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
