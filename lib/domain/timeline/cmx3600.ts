import { invalidInput } from '../errors';
import { fps, type FramedClip, type FramedMarker, type FramedTimeline, type Rate } from './model';

/**
 * CMX 3600 EDL (Premiere, Avid, Resolve): one event per clip on the video track and both audio
 * tracks (`AA/V`; `AA` for audio-only media, `V` for silent video), source timecodes at the
 * media's rate, record timecodes laid end to end from 00:00:00:00, so a record time reads as the
 * composition's time. Reels are eight characters (the format's limit) made from the stable file
 * names; the `* FROM CLIP NAME` and `* SOURCE FILE` comments that Premiere and Resolve read relink
 * each reel to its file. Timecode is non-drop frame; at 29.97 fps it counts 30 nominal frames a
 * second, as NDF does.
 *
 * A multitrack sequence's tracks are lanes (see model.ts). The format has one video and two audio
 * channels, so a composition whose clips sound on at most two lanes and show a picture on at most
 * one can be written: where two lanes sound at once, the first lane's event is on `A` and the
 * second's on `A2`; an event alone at its time keeps both channels (`AA`), as a plain clip does.
 * More lanes are refused with the formats that hold them.
 */

/** Frames as HH:MM:SS:FF at the rate's nominal (rounded) frames per second. */
export function timecode(frames: number, r: Rate): string {
  const nominal = Math.round(fps(r));
  const ff = frames % nominal;
  const seconds = Math.floor(frames / nominal);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(Math.floor(seconds / 3600))}:${two(Math.floor(seconds / 60) % 60)}:${two(seconds % 60)}:${two(ff)}`;
}

/** Eight-character reel names, unique, from the stable file names of the media the clips play. */
export function reelNames(clips: readonly FramedClip[]): Map<string, string> {
  const reels = new Map<string, string>();
  const taken = new Set<string>();
  for (const { media } of clips) {
    if (reels.has(media.file)) continue;
    const base =
      media.file
        .replace(/\.[^.]*$/, '')
        .toUpperCase()
        .replace(/[^A-Z0-9]+/g, '') || 'REEL';
    let reel = base.slice(0, 8);
    for (let n = 2; taken.has(reel); n++) reel = base.slice(0, 8 - String(n).length) + String(n);
    taken.add(reel);
    reels.set(media.file, reel);
  }
  return reels;
}

/** An EDL has one picture track: a composition with pictures on two lanes is refused. */
function assertOneVideoLane(t: FramedTimeline): void {
  const lanes = new Set(t.clips.filter((c) => c.media.has_video).map((c) => c.lane));
  if (lanes.size > 1)
    throw invalidInput(`a CMX 3600 EDL holds one video track; this composition needs ${lanes.size}: export fcpxml or otio`);
}

/**
 * Each clip's channel field: `AA`, `A` or `A2` for its sound, `/V` (or `V` alone) for its picture.
 * A clip alone at its time has both channels (`AA`); clips sounding together share `A` and `A2`,
 * the lower lane on `A` where it can be. An EDL has two audio channels: more clips sounding at
 * once, whatever the number of lanes, is refused (a sequence of three tracks that never sound
 * three at a time fits).
 */
function channelsOf(t: FramedTimeline): Map<FramedClip, string> {
  assertOneVideoLane(t);
  const audio = audioChannels(t);
  const channels = new Map<FramedClip, string>();
  for (const c of t.clips) {
    const sound = audio.get(c) ?? '';
    channels.set(c, c.media.has_video ? (sound ? `${sound}/V` : 'V') : sound);
  }
  return channels;
}

/** `AA` for a clip sounding alone, else `A` or `A2`: one pass in record order, as `soundingTogether`. */
function audioChannels(t: FramedTimeline): Map<FramedClip, 'AA' | 'A' | 'A2'> {
  const overlapped = soundingTogether(t.clips);
  const lanes = [...new Set(t.clips.filter((c) => c.media.has_audio).map((c) => c.lane))].sort((a, b) => a - b);
  const channels = new Map<FramedClip, 'AA' | 'A' | 'A2'>();
  let sounding: FramedClip[] = [];
  for (const c of t.clips.filter((c) => c.media.has_audio)) {
    if (!overlapped.has(c)) {
      channels.set(c, 'AA');
      continue;
    }
    sounding = sounding.filter((o) => o.recordOut > c.recordIn);
    const taken = new Set(sounding.map((o) => channels.get(o)));
    const preferred: ('A' | 'A2')[] = lanes.indexOf(c.lane) === 0 ? ['A', 'A2'] : ['A2', 'A'];
    const free = preferred.find((ch) => !taken.has(ch));
    if (!free) {
      throw invalidInput(
        `a CMX 3600 EDL holds two audio tracks; this composition sounds three at once at ${timecode(c.recordIn, t.rate)}: export fcpxml or otio`,
      );
    }
    channels.set(c, free);
    sounding.push(c);
  }
  return channels;
}

/**
 * The clips with sound while a clip of another lane sounds. One pass in record order: the clips
 * still sounding when one starts are at most one per lane, so an hour cut into thousands of clips
 * costs no more than its clips.
 */
function soundingTogether(clips: readonly FramedClip[]): Set<FramedClip> {
  const together = new Set<FramedClip>();
  let sounding: FramedClip[] = [];
  for (const c of clips.filter((c) => c.media.has_audio)) {
    sounding = sounding.filter((o) => o.recordOut > c.recordIn);
    for (const o of sounding.filter((o) => o.lane !== c.lane)) together.add(o).add(c);
    sounding.push(c);
  }
  return together;
}

/** A title line keeps to printable ASCII: EDL readers are byte-oriented and some stop at anything else. */
const ascii = (s: string): string => s.replace(/[^\x20-\x7e]+/g, '_');

export function toCmx3600(t: FramedTimeline): string {
  const reels = reelNames(t.clips);
  const channels = channelsOf(t);
  const marked = new Set<FramedMarker>(); // a marker once, on the first event under it
  const lines = [`TITLE: ${ascii(t.name).slice(0, 70)}`, 'FCM: NON-DROP FRAME', ''];
  t.clips.forEach((c, i) => {
    const event = String(i + 1).padStart(3, '0');
    const source = `${timecode(c.sourceIn, c.sourceRate)} ${timecode(c.sourceOut, c.sourceRate)}`;
    const record = `${timecode(c.recordIn, t.rate)} ${timecode(c.recordOut, t.rate)}`;
    lines.push(`${event}  ${reels.get(c.media.file)!.padEnd(8)} ${channels.get(c)!.padEnd(5)} C        ${source} ${record}`);
    lines.push(`* FROM CLIP NAME: ${ascii(c.media.file)}`, `* SOURCE FILE: ${ascii(c.media.file)}`);
    for (const m of t.markers.filter((m) => !marked.has(m) && m.frame >= c.recordIn && m.frame < c.recordOut)) {
      marked.add(m);
      lines.push(`* LOC: ${timecode(m.frame, t.rate)} RED     ${ascii(m.label)}`);
    }
    lines.push('');
  });
  return lines.join('\r\n');
}
