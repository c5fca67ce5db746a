import { clipSpans, type Clip } from './edl';

/**
 * A render as data (issue 21): what a composition's clip list becomes as one ffmpeg run. Pure, so
 * the filter graph is tested without ffmpeg and the adapter only runs it.
 *
 * Every clip is its own input, seeked with `-ss`/`-t` before `-i`: ffmpeg decodes from the key frame
 * before the cut and drops frames up to it, so cuts are exact and a clip late in a long file costs
 * no decoding of what precedes it. Each clip's picture and sound are then brought to one frame
 * size, frame rate and sample format and trimmed to a whole number of frames (Video) or samples
 * (Audio), and `concat` lays them end to end. The frame counts come from the clip spans in
 * composition time, rounded once per boundary, so rounding never accumulates over many cuts.
 */

// ---------------------------------------------------------------- input

export type RenderResolution = '480p' | '720p' | '1080p' | '1440p' | '4K';
export type RenderMediaType = 'Video' | 'Audio';
/** The composition's audio settings (issue 20's `set_audio`); absent or null means untouched. */
export type RenderAudioSettings = { readonly loudness_lufs?: number | null; readonly noise_reduction?: boolean | null };

/** One stored file as the render needs it: its blob and the properties stored at import. */
export type RenderSource = {
  readonly blob: string;
  readonly kind: 'video' | 'audio' | 'image';
  readonly hasAudio: boolean;
  readonly width?: number | null;
  readonly height?: number | null;
  /** Degrees clockwise the picture is shown rotated (ffmpeg applies it when decoding). */
  readonly rotation?: number | null;
  readonly frameRate?: number | null;
};
/** A media reference of the project: a file, or a multitrack sequence of files, each from its offset. */
export type RenderMedia =
  RenderSource | { readonly kind: 'sequence'; readonly tracks: readonly { readonly source: RenderSource; readonly offset: number }[] };

export type RenderSpec = {
  readonly clips: readonly Clip[];
  /** By media reference (a Map: references are user-chosen names). */
  readonly media: ReadonlyMap<string, RenderMedia>;
  readonly mediaType: RenderMediaType;
  /** The composition's frame: its aspect ratio is kept. */
  readonly frame: { readonly width: number; readonly height: number };
  /** Video only; default 1080p. */
  readonly resolution?: RenderResolution;
  /** Render at `resolution` even when every source is smaller. */
  readonly upscale?: boolean;
  readonly audio?: RenderAudioSettings;
};

export type RenderPlan = {
  /** ffmpeg's arguments, writing to the output path given to `planRender`. */
  readonly args: readonly string[];
  /** Seconds of the output: the composition's after cuts, to the frame (Video) or sample (Audio). */
  readonly durationSeconds: number;
  readonly width?: number;
  readonly height?: number;
  readonly frameRate?: string;
};

export const SAMPLE_RATE = 48_000;
const SHORT_SIDE: Record<RenderResolution, number> = { '480p': 480, '720p': 720, '1080p': 1080, '1440p': 1440, '4K': 2160 };
/** The longest side a frame may have: 8K UHD's width (mp4 and H.264 refuse far larger frames). */
const MAX_LONG_SIDE = 7680;
const DEFAULT_FRAME_RATE = 30;
const MAX_FRAME_RATE = 60;
/** The NTSC rates, written as ffmpeg's exact rationals when a source's rounded rate is one of them. */
const NTSC: readonly [number, string][] = [
  [23.976, '24000/1001'],
  [29.97, '30000/1001'],
  [59.94, '60000/1001'],
];

// ---------------------------------------------------------------- frame

type Frame = { readonly width: number; readonly height: number; readonly rate: number; readonly rateText: string };

const even = (n: number): number => Math.max(2, 2 * Math.round(n / 2));

/** Width and height as shown: a quarter turn swaps them. */
function shownSize(s: RenderSource): { w: number; h: number } | null {
  if (!s.width || !s.height) return null;
  const quarter = Math.abs(Math.round((s.rotation ?? 0) / 90)) % 2 === 1;
  return quarter ? { w: s.height, h: s.width } : { w: s.width, h: s.height };
}

/** The short side of the frame (of aspect `aspect`) in which a source shows at its own size. */
function nativeShortSide(size: { w: number; h: number }, aspect: number): number {
  const width = Math.max(size.w, size.h * aspect);
  return Math.min(width, width / aspect);
}

const sourcesOf = (m: RenderMedia): readonly RenderSource[] => (m.kind === 'sequence' ? m.tracks.map((t) => t.source) : [m]);

/** The output frame: the resolution's short side, capped by the largest source unless upscaling is asked. */
export function outputFrame(spec: RenderSpec, used: readonly RenderSource[]): Frame {
  const aspect = spec.frame.width / spec.frame.height;
  const pictures = used.filter((s) => s.kind !== 'audio');
  const sizes = pictures.map(shownSize).filter((s) => s !== null);
  const wanted = SHORT_SIDE[spec.resolution ?? '1080p'];
  const largest = sizes.length > 0 ? Math.max(...sizes.map((s) => nativeShortSide(s, aspect))) : wanted;
  const short = spec.upscale ? wanted : Math.min(wanted, largest);
  const [wide, high] = aspect >= 1 ? [short * aspect, short] : [short, short / aspect];
  // An extreme aspect (the API takes 16 to 7,680 by 16 to 4,320) keeps its long side within 8K.
  const fit = Math.min(1, MAX_LONG_SIDE / Math.max(wide, high));
  const [width, height] = [even(wide * fit), even(high * fit)];
  const rates = used.filter((s) => s.kind === 'video' && s.frameRate && s.frameRate > 0).map((s) => s.frameRate!);
  const rate = Math.min(MAX_FRAME_RATE, rates.length > 0 ? Math.max(...rates) : DEFAULT_FRAME_RATE);
  const ntsc = NTSC.find(([r]) => Math.abs(r - rate) < 0.01);
  const rateText = ntsc ? ntsc[1] : String(Math.round(rate * 1000) / 1000);
  return { width, height, rate: ntsc ? Number(ntsc[1].split('/')[0]) / 1001 : rate, rateText };
}

// ---------------------------------------------------------------- plan

/** Per clip: its length in output frames (Video) and samples; cumulative boundaries rounded once each. */
function clipLengths(clips: readonly Clip[], frame: Frame | null): { frames: number; samples: number }[] {
  const spans = clipSpans(clips);
  const at = (t: number) => (frame ? Math.round(t * frame.rate) : 0);
  // In Video the sound of a clip lasts as long as its pictures, so the two never drift apart.
  const seconds = (t: number) => (frame ? at(t) / frame.rate : t);
  return spans.map(({ start, end }) => ({
    frames: at(end) - at(start),
    samples: Math.round(seconds(end) * SAMPLE_RATE) - Math.round(seconds(start) * SAMPLE_RATE),
  }));
}

/** What the clips are planned into, and what planning each reads. */
type Planning = {
  readonly inputs: string[][];
  readonly chains: string[];
  readonly pathOf: PathOf;
  readonly whitelist: string;
  readonly frame: Frame | null;
};
type Length = { readonly frames: number; readonly samples: number };

const secs = (n: number): string => n.toFixed(6).replace(/\.?0+$/, '') || '0';

/** `-ss`/`-t` before `-i`: an exact seek (see the top of this file); `t` omitted for a still picture. */
function input(path: string, whitelist: string, from: number, seconds: number | null): string[] {
  const seek = from > 0 ? ['-ss', secs(from)] : [];
  const length = seconds !== null ? ['-t', secs(seconds)] : [];
  return [...seek, ...length, '-format_whitelist', whitelist, '-i', path];
}

/** A source decoded at the frame's size needs no scaling (ffmpeg turns pictures upright as it decodes). */
const fillsFrame = (s: RenderSource, frame: Frame): boolean => {
  const size = shownSize(s);
  return size !== null && size.w === frame.width && size.h === frame.height;
};

/** `fits`: the pictures are already the frame's size (a source that fills it, the black of an audio clip). */
function videoChain(label: string, frame: Frame, frames: number, delaySeconds: number, fits: boolean): string {
  const fit = fits
    ? ''
    : `scale=${frame.width}:${frame.height}:force_original_aspect_ratio=decrease,pad=${frame.width}:${frame.height}:(ow-iw)/2:(oh-ih)/2:black,`;
  // A picture shorter than its clip (a still, a video whose sound runs longer) holds its last frame.
  const start = delaySeconds > 0 ? `,tpad=start_duration=${secs(delaySeconds)}:start_mode=add:color=black` : '';
  return `${label}setpts=PTS-STARTPTS,${fit}setsar=1,format=yuv420p,fps=${frame.rateText}${start},tpad=stop=-1:stop_mode=clone,trim=end_frame=${frames},setpts=PTS-STARTPTS`;
}

const AUDIO_FORMAT = `aresample=${SAMPLE_RATE},aformat=sample_fmts=fltp:sample_rates=${SAMPLE_RATE}:channel_layouts=stereo`;
/** Sound padded with silence and cut to exactly `samples`: a clip's sound never runs short or long. */
const exactly = (samples: number) => `apad,atrim=end_sample=${samples},asetpts=PTS-STARTPTS`;
const silence = (samples: number) => `anullsrc=r=${SAMPLE_RATE}:cl=stereo,${exactly(samples)}`;

function sourceClip(b: Planning, c: Clip, s: RenderSource, n: Length, i: number) {
  const { pathOf, whitelist, frame } = b;
  const idx = b.inputs.length;
  if (s.kind === 'image') {
    if (!frame) return void b.chains.push(`${silence(n.samples)}[a${i}]`);
    b.inputs.push(input(pathOf(s.blob), whitelist, 0, null));
  } else b.inputs.push(input(pathOf(s.blob), whitelist, c.in, c.out - c.in));
  if (frame) {
    const picture = s.kind === 'audio' ? `color=c=black:s=${frame.width}x${frame.height}:r=${frame.rateText},` : `[${idx}:v:0]`;
    b.chains.push(`${videoChain(picture, frame, n.frames, 0, s.kind === 'audio' || fillsFrame(s, frame))}[v${i}]`);
  }
  b.chains.push(
    s.hasAudio && s.kind !== 'image'
      ? `[${idx}:a:0]${AUDIO_FORMAT},asetpts=PTS-STARTPTS,${exactly(n.samples)}[a${i}]`
      : `${silence(n.samples)}[a${i}]`,
  );
}

/**
 * A sequence clip [in, out) in sequence time: every track sounding then, delayed or seeked by its
 * offset, mixed; the picture is the first video track's, black until it starts.
 */
/**
 * The most one `adelay` takes: ffmpeg counts its delay in samples in a 32-bit integer, which at
 * 48 kHz overflows past 44,739 s (a track offset of 12.4 hours was refused as a negative delay).
 */
const MAX_ADELAY_MS = 40_000_000;

/** `adelay` of `seconds`, in stages of at most MAX_ADELAY_MS each (delays add up). */
export function audioDelay(seconds: number): string {
  let ms = Math.round(seconds * 1000);
  const stages: string[] = [];
  do {
    const stage = Math.min(ms, MAX_ADELAY_MS);
    stages.push(`adelay=${stage}|${stage}`);
    ms -= stage;
  } while (ms > 0);
  return stages.join(',');
}

function sequenceClip(b: Planning, c: Clip, m: Extract<RenderMedia, { kind: 'sequence' }>, n: Length, i: number) {
  const { pathOf, whitelist, frame } = b;
  const length = c.out - c.in;
  const playing = m.tracks.filter((t) => t.offset < c.out && t.source.kind !== 'image');
  const mixed: string[] = [];
  let picture = false;
  for (const t of playing) {
    const delay = Math.max(0, t.offset - c.in);
    const shown = frame !== null && !picture && t.source.kind === 'video';
    // A track with neither sound to mix nor the picture to show is not opened.
    if (!t.source.hasAudio && !shown) continue;
    const idx = b.inputs.length;
    b.inputs.push(input(pathOf(t.source.blob), whitelist, Math.max(0, c.in - t.offset), length - delay));
    if (t.source.hasAudio) {
      b.chains.push(`[${idx}:a:0]${AUDIO_FORMAT},asetpts=PTS-STARTPTS,${audioDelay(delay)},${exactly(n.samples)}[a${i}t${mixed.length}]`);
      mixed.push(`[a${i}t${mixed.length}]`);
    }
    if (shown) {
      picture = true;
      b.chains.push(`${videoChain(`[${idx}:v:0]`, frame, n.frames, delay, fillsFrame(t.source, frame))}[v${i}]`);
    }
  }
  if (frame && !picture)
    b.chains.push(`${videoChain(`color=c=black:s=${frame.width}x${frame.height}:r=${frame.rateText},`, frame, n.frames, 0, true)}[v${i}]`);
  // amix divides by its input count; every input lasts the same, so `volume` gives back the plain sum.
  if (mixed.length === 0) b.chains.push(`${silence(n.samples)}[a${i}]`);
  else if (mixed.length === 1) b.chains.push(`${mixed[0]}anull[a${i}]`);
  else
    b.chains.push(
      `${mixed.join('')}amix=inputs=${mixed.length}:duration=longest:dropout_transition=0,volume=${mixed.length},${exactly(n.samples)}[a${i}]`,
    );
}

/** The composition's audio settings, after the clips are joined. */
function finishAudio(settings: RenderAudioSettings | undefined): string {
  const steps: string[] = [];
  if (settings?.noise_reduction) steps.push('afftdn=nf=-25');
  // loudnorm works at 192 kHz internally and says so on its output: resample back.
  if (typeof settings?.loudness_lufs === 'number')
    steps.push(`loudnorm=I=${settings.loudness_lufs}:TP=-1.5:LRA=11`, `aresample=${SAMPLE_RATE}`);
  return steps.length > 0 ? steps.join(',') : 'anull';
}

export type PathOf = (blob: string) => string;

/**
 * The ffmpeg run that renders `spec` to `output` (an absolute path). `pathOf` gives a blob's local
 * absolute path; `whitelist` the demuxers inputs may be read as (READABLE_DEMUXERS). Throws on a
 * clip whose media is not in `spec.media`: the caller checks the composition first.
 */
export function planRender(spec: RenderSpec, pathOf: PathOf, whitelist: string, output: string): RenderPlan {
  const { frame, lengths, durationSeconds, mediaOf } = layout(spec);
  const built: Planning = { inputs: [], chains: [], pathOf, whitelist, frame };
  spec.clips.forEach((c, i) => {
    const m = mediaOf(c.media);
    if (m.kind === 'sequence') sequenceClip(built, c, m, lengths[i], i);
    else sourceClip(built, c, m, lengths[i], i);
  });
  const joined = spec.clips.map((_, i) => (frame ? `[v${i}][a${i}]` : `[a${i}]`)).join('');
  built.chains.push(`${joined}concat=n=${spec.clips.length}:v=${frame ? 1 : 0}:a=1${frame ? '[v]' : ''}[joined]`);
  built.chains.push(`[joined]${finishAudio(spec.audio)}[a]`);
  return {
    args: [
      ...['-nostdin', '-hide_banner', '-loglevel', 'error', '-nostats', '-progress', 'pipe:1', '-protocol_whitelist', 'file'],
      ...built.inputs.flat(),
      ...['-filter_complex', built.chains.join(';')],
      ...(frame
        ? ['-map', '[v]', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', '-pix_fmt', 'yuv420p', '-r', frame.rateText]
        : []),
      ...['-map', '[a]', '-c:a', 'aac', '-b:a', '192k', '-ar', String(SAMPLE_RATE), '-ac', '2'],
      ...['-map_metadata', '-1', '-movflags', '+faststart', '-f', frame ? 'mp4' : 'ipod', '-y', output],
    ],
    durationSeconds,
    ...(frame && { width: frame.width, height: frame.height, frameRate: frame.rateText }),
  };
}

/** The output's frame, each clip's length in frames and samples, and the duration they make. */
function layout(spec: RenderSpec) {
  const mediaOf = (ref: string): RenderMedia => {
    const m = spec.media.get(ref);
    if (!m) throw new Error(`the composition names media "${ref}" that the render was not given`);
    return m;
  };
  const used = spec.clips.flatMap((c) => sourcesOf(mediaOf(c.media)));
  const frame = spec.mediaType === 'Video' ? outputFrame(spec, used) : null;
  const lengths = clipLengths(spec.clips, frame);
  const durationSeconds = frame
    ? lengths.reduce((sum, l) => sum + l.frames, 0) / frame.rate
    : lengths.reduce((sum, l) => sum + l.samples, 0) / SAMPLE_RATE;
  return { frame, lengths, durationSeconds, mediaOf };
}

/** What the render of `spec` is, without planning it: its seconds, and its picture's size (Video). */
export function renderShape(spec: RenderSpec): { durationSeconds: number; width: number | null; height: number | null } {
  const { frame, durationSeconds } = layout(spec);
  return { durationSeconds, width: frame?.width ?? null, height: frame?.height ?? null };
}

/**
 * What identifies a render's output: the clips, the sources (by blob: a blob never changes) and
 * the settings, as canonical JSON. Hashed, it keys the render cache (lib/app/render-cache.ts).
 */
export function renderIdentity(spec: RenderSpec): string {
  const refs = [...new Set(spec.clips.map((c) => c.media))].sort();
  return JSON.stringify({
    v: 1,
    clips: spec.clips.map((c) => [c.media, c.in, c.out]),
    media: refs.map((ref) => [ref, canonicalMedia(spec.media.get(ref))]),
    mediaType: spec.mediaType,
    frame: spec.mediaType === 'Video' ? [spec.frame.width, spec.frame.height, spec.resolution ?? '1080p', spec.upscale === true] : null,
    audio: [spec.audio?.loudness_lufs ?? null, spec.audio?.noise_reduction === true],
  });
}

/** Fields in a fixed order, whatever order the caller built the object in. */
const canonicalSource = (s: RenderSource) => [
  s.blob,
  s.kind,
  s.hasAudio,
  s.width ?? null,
  s.height ?? null,
  s.rotation ?? null,
  s.frameRate ?? null,
];
const canonicalMedia = (m: RenderMedia | undefined) =>
  m === undefined ? null : m.kind === 'sequence' ? m.tracks.map((t) => [canonicalSource(t.source), t.offset]) : canonicalSource(m);
