import type { FramedClip, FramedTimeline, Rate } from './model';

/**
 * FCPXML 1.10 (Final Cut Pro 10.6+, DaVinci Resolve): one format and one asset per media file
 * (the asset's `src` is its stable file name, relative to the exported file, so a bundle opens
 * where it is unpacked), and a library → event → project whose sequence spine holds one
 * `asset-clip` per lane-0 clip, and a `gap` wherever lane 0 plays nothing. The other lanes of a
 * multitrack sequence are connected clips of the spine element under their first frame, on lane
 * -k: below the primary storyline, where Final Cut keeps connected audio and composites a picture
 * behind the spine's, so the first video track is the one seen, as the renderer shows it. Times
 * are rational seconds in frames of their rate ("42/25s"); a connected clip's offset is in its
 * parent's time. Markers belong to the spine element under them, in that element's time.
 */

/** `frames` frames of `rate` as an FCPXML time. */
export const rational = (frames: number, r: Rate): string => (frames === 0 ? '0s' : `${frames * r.den}/${r.num}s`);

const ENTITIES: ReadonlyMap<string, string> = new Map([
  ['&', '&amp;'],
  ['<', '&lt;'],
  ['>', '&gt;'],
  ['"', '&quot;'],
  ["'", '&apos;'],
]);

/** Characters XML 1.0 cannot carry at all are dropped; the five special ones become entities. */
const escapeXml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ENTITIES.get(c)!).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, ''); // eslint-disable-line no-control-regex

const attrs = (a: Record<string, string | number>): string =>
  Object.entries(a)
    .map(([k, v]) => ` ${k}="${escapeXml(String(v))}"`)
    .join('');

export function toFcpxml(t: FramedTimeline): string {
  const assets = new Map<string, string>(); // file → asset id
  const lines: string[] = [];
  const formatId = 'r1';
  lines.push('<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE fcpxml>', '<fcpxml version="1.10">', '  <resources>');
  lines.push(`    <format${attrs({ id: formatId, frameDuration: rational(1, t.rate), width: t.width, height: t.height })}/>`);
  for (const c of t.clips) {
    if (assets.has(c.media.file)) continue;
    const id = `r${assets.size + 2}`;
    assets.set(c.media.file, id);
    lines.push(assetLine(c, id, formatId));
  }
  lines.push('  </resources>', '  <library>', `    <event${attrs({ name: t.name })}>`, `      <project${attrs({ name: t.name })}>`);
  const sequence = {
    format: formatId,
    duration: rational(t.length, t.rate),
    tcStart: '0s',
    tcFormat: 'NDF',
    audioLayout: 'stereo',
    audioRate: '48k',
  };
  lines.push(`        <sequence${attrs(sequence)}>`, '          <spine>');
  for (const item of spineOf(t)) lines.push(...spineLines(t, item, assets));
  lines.push('          </spine>', '        </sequence>', '      </project>', '    </event>', '  </library>', '</fcpxml>', '');
  return lines.join('\n');
}

/** A spine element: a lane-0 clip, or a gap over record frames [recordIn, recordOut); with the other lanes' clips that start on it. */
type SpineItem = {
  readonly clip: FramedClip | null;
  readonly recordIn: number;
  readonly recordOut: number;
  readonly connected: FramedClip[];
};

/** Lane-0 clips end to end, gaps between them (a sequence whose first track starts late or ends early), every other clip on the item under its first frame. */
function spineOf(t: FramedTimeline): SpineItem[] {
  const items: SpineItem[] = [];
  let at = 0;
  const gapTo = (frame: number) => {
    if (frame > at) items.push({ clip: null, recordIn: at, recordOut: frame, connected: [] });
  };
  for (const c of t.clips.filter((c) => c.lane === 0)) {
    gapTo(c.recordIn);
    items.push({ clip: c, recordIn: c.recordIn, recordOut: c.recordOut, connected: [] });
    at = c.recordOut;
  }
  gapTo(t.length);
  // Both in record order: walk the spine once.
  let i = 0;
  for (const c of t.clips.filter((c) => c.lane !== 0)) {
    while (items[i].recordOut <= c.recordIn) i++;
    items[i].connected.push(c);
  }
  return items;
}

/** Frames since `item`'s first frame (timeline frames) as a time of the item's own clock: its source time, or a gap's from 0. */
const itemTime = (t: FramedTimeline, item: SpineItem, frames: number): string =>
  item.clip ? rationalSum(item.clip.sourceIn, item.clip.sourceRate, frames, t.rate) : rational(frames, t.rate);

function spineLines(t: FramedTimeline, item: SpineItem, assets: ReadonlyMap<string, string>): string[] {
  const inner = [
    ...item.connected.map((c) => {
      const lane = { lane: -c.lane, offset: itemTime(t, item, c.recordIn - item.recordIn) };
      return `              <asset-clip${attrs(clipAttrs(t, c, assets, lane))}/>`;
    }),
    ...t.markers
      .filter((m) => m.frame >= item.recordIn && m.frame < item.recordOut)
      .map((m) => {
        const marker = { start: itemTime(t, item, m.frame - item.recordIn), duration: rational(1, t.rate), value: m.label };
        return `              <marker${attrs(marker)}/>`;
      }),
  ];
  const [tag, a] = item.clip
    ? ['asset-clip', clipAttrs(t, item.clip, assets, { offset: rational(item.recordIn, t.rate) })]
    : [
        'gap',
        { name: 'Gap', offset: rational(item.recordIn, t.rate), start: '0s', duration: rational(item.recordOut - item.recordIn, t.rate) },
      ];
  if (inner.length === 0) return [`            <${tag}${attrs(a)}/>`];
  return [`            <${tag}${attrs(a)}>`, ...inner, `            </${tag}>`];
}

/** An asset-clip's attributes; `place` is where it sits: its offset, and a connected clip's lane. */
function clipAttrs(t: FramedTimeline, c: FramedClip, assets: ReadonlyMap<string, string>, place: Record<string, string | number>) {
  return {
    ref: assets.get(c.media.file)!,
    ...place,
    name: c.media.file,
    start: rational(c.sourceIn, c.sourceRate),
    duration: rational(c.recordOut - c.recordIn, t.rate),
    ...(!c.media.has_video && { audioRole: 'dialogue' }),
  };
}

function assetLine(c: FramedClip, id: string, formatId: string): string {
  const m = c.media;
  const duration =
    m.duration === null ? c.sourceOut : Math.max(c.sourceOut, Math.round((m.duration * c.sourceRate.num) / c.sourceRate.den));
  const a = {
    id,
    name: m.file,
    start: '0s',
    duration: rational(duration, c.sourceRate),
    hasVideo: m.has_video ? 1 : 0,
    hasAudio: m.has_audio ? 1 : 0,
    ...(m.has_video && { format: formatId }),
    ...(m.has_audio && { audioSources: 1, audioChannels: 2, audioRate: 48000 }),
  };
  return `    <asset${attrs(a)}>\n      <media-rep${attrs({ kind: 'original-media', src: encodeURI(m.file) })}/>\n    </asset>`;
}

/** a frames of `ra` plus b frames of `rb`, as one rational time. */
function rationalSum(a: number, ra: Rate, b: number, rb: Rate): string {
  if (ra.num === rb.num && ra.den === rb.den) return rational(a + b, ra);
  const num = a * ra.den * rb.num + b * rb.den * ra.num;
  const den = ra.num * rb.num;
  return num === 0 ? '0s' : `${num}/${den}s`;
}
