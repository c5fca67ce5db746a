import type { FramedClip, FramedTimeline, Rate } from './model';

/**
 * FCPXML 1.10 (Final Cut Pro 10.6+, DaVinci Resolve): one format and one asset per media file
 * (the asset's `src` is its stable file name, relative to the exported file, so a bundle opens
 * where it is unpacked), and a library → event → project whose sequence spine holds one
 * `asset-clip` per clip. Times are rational seconds in frames of their rate ("42/25s"). Markers
 * belong to the clip under them and are written in that clip's source time, as FCPXML wants.
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
  for (const c of t.clips) lines.push(...clipLines(t, c, assets.get(c.media.file)!));
  lines.push('          </spine>', '        </sequence>', '      </project>', '    </event>', '  </library>', '</fcpxml>', '');
  return lines.join('\n');
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

function clipLines(t: FramedTimeline, c: FramedClip, ref: string): string[] {
  const a = {
    ref,
    name: c.media.file,
    offset: rational(c.recordIn, t.rate),
    start: rational(c.sourceIn, c.sourceRate),
    duration: rational(c.recordOut - c.recordIn, t.rate),
    ...(!c.media.has_video && { audioRole: 'dialogue' }),
  };
  const markers = t.markers.filter((m) => m.frame >= c.recordIn && m.frame < c.recordOut);
  if (markers.length === 0) return [`            <asset-clip${attrs(a)}/>`];
  return [
    `            <asset-clip${attrs(a)}>`,
    ...markers.map((m) => {
      // Source time of the marker: the clip's start plus its distance from the clip's offset, in timeline frames.
      const start = `${rationalSum(c.sourceIn, c.sourceRate, m.frame - c.recordIn, t.rate)}`;
      return `              <marker${attrs({ start, duration: rational(1, t.rate), value: m.label })}/>`;
    }),
    '            </asset-clip>',
  ];
}

/** a frames of `ra` plus b frames of `rb`, as one rational time. */
function rationalSum(a: number, ra: Rate, b: number, rb: Rate): string {
  if (ra.num === rb.num && ra.den === rb.den) return rational(a + b, ra);
  const num = a * ra.den * rb.num + b * rb.den * ra.num;
  const den = ra.num * rb.num;
  return num === 0 ? '0s' : `${num}/${den}s`;
}
