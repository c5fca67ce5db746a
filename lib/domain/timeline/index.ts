import { assertNever } from '../errors';
import { toCmx3600 } from './cmx3600';
import { toFcpxml } from './fcpxml';
import { frameTimeline, type TimelineInput } from './model';
import { toOtio } from './otio';

export { stableFileNames } from './file-names';
export { DEFAULT_RATE, type Rate, type TimelineInput, type TimelineMedia } from './model';

export const TIMELINE_FORMATS = ['fcpxml', 'edl', 'otio'] as const;
export type TimelineFormat = (typeof TIMELINE_FORMATS)[number];

export type TimelineFile = { readonly text: string; readonly contentType: string; readonly extension: string };

/** A composition as a timeline file another editor opens. */
export function renderTimeline(format: TimelineFormat, input: TimelineInput): TimelineFile {
  const framed = frameTimeline(input);
  switch (format) {
    case 'fcpxml':
      return { text: toFcpxml(framed), contentType: 'application/xml; charset=utf-8', extension: '.fcpxml' };
    case 'edl':
      return { text: toCmx3600(framed), contentType: 'text/plain; charset=utf-8', extension: '.edl' };
    case 'otio':
      return { text: toOtio(framed), contentType: 'application/json; charset=utf-8', extension: '.otio' };
    default:
      return assertNever(format);
  }
}

/** "29.97", 25, "30000/1001": a probed frame rate as a fraction; null for anything else. 29.97 and 23.976 snap to NTSC's x/1001. */
export function rateOf(value: unknown): { num: number; den: number } | null {
  const ntsc = (f: number) => [24, 30, 60].find((n) => Math.abs(f - (n * 1000) / 1001) < 0.005);
  if (typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= 1000) {
    if (Number.isInteger(value)) return { num: value, den: 1 };
    const n = ntsc(value);
    return n ? { num: n * 1000, den: 1001 } : { num: Math.round(value * 1000), den: 1000 };
  }
  if (typeof value === 'string') {
    const m = /^(\d{1,6})(?:\/(\d{1,6}))?$/.exec(value.trim());
    if (m && Number(m[1]) > 0 && Number(m[2] ?? 1) > 0) return { num: Number(m[1]), den: Number(m[2] ?? 1) };
    if (/^\d{1,4}\.\d{1,6}$/.test(value.trim())) return rateOf(Number(value));
  }
  return null;
}
