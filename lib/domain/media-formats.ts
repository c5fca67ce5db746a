import { assertNever } from './errors';

/**
 * Which probed files the service imports (SPEC "Supported media"): WAV, FLAC, AAC and MP3 audio,
 * H.264 or HEVC video in MP4 or MOV, PNG and JPEG images. Anything else fails its own file with a
 * message saying what the file is and what would have been accepted. The one place the rule lives.
 */

/** What the rule reads of a probe; the MediaProber port's ProbeResult carries it. Names are ffprobe's. */
export interface ProbedMedia {
  readonly type: 'audio' | 'video' | 'image' | 'other';
  /** ffprobe's demuxer name(s): `wav`, `mov,mp4,m4a,3gp,3g2,mj2`, `png_pipe`, `matroska,webm`… */
  readonly formatName: string;
  /** The ISO base media major brand, trimmed (`isom`, `M4A`, `qt`, `3gp6`); absent elsewhere and in old QuickTime files. */
  readonly brand?: string;
  /** Codecs of the audio streams, in file order (`aac`, `pcm_s16le`, `opus`…). */
  readonly audioCodecs: readonly string[];
  /** Codecs of the picture streams without cover art, in file order (`h264`, `hevc`, `png`, `mjpeg`…). */
  readonly videoCodecs: readonly string[];
}

export type MediaAcceptance = { readonly type: 'audio' | 'video' | 'image' } | { readonly error_message: string };

export const SUPPORTED_MEDIA = 'WAV, FLAC, AAC, MP3, H.264 or HEVC video in MP4 or MOV, PNG and JPEG images';
export const NO_MEDIA_STREAM = 'the file has no audio, video or image stream';

// ---- containers ---------------------------------------------------------------------------

type Container = 'wav' | 'flac' | 'adts' | 'mpeg-audio' | 'mp4' | 'mov' | 'still' | 'other';

const BY_DEMUXER: ReadonlyMap<string, Container> = new Map([
  ['wav', 'wav'],
  ['flac', 'flac'],
  ['aac', 'adts'],
  ['mp3', 'mpeg-audio'],
  ['image2', 'still'],
  ['png_pipe', 'still'],
  ['jpeg_pipe', 'still'],
]);

const LABELS: ReadonlyMap<string, string> = new Map([
  ['wav', 'WAV'],
  ['flac', 'FLAC'],
  ['aac', 'ADTS AAC'],
  ['mp3', 'MPEG audio'],
  ['ogg', 'Ogg'],
  ['matroska,webm', 'Matroska/WebM'],
  ['avi', 'AVI'],
  ['asf', 'ASF (WMA/WMV)'],
  ['flv', 'FLV'],
  ['mpegts', 'MPEG-TS'],
  ['mpeg', 'MPEG-PS'],
  ['aiff', 'AIFF'],
  ['caf', 'CAF'],
  ['w64', 'Wave64'],
  ['amr', 'AMR'],
  ['mxf', 'MXF'],
]);

/** The ISO base media demuxer reads MP4, MOV and their relatives alike; the major brand tells them apart. */
function containerOf(probe: ProbedMedia): { id: Container; label: string } {
  if (probe.formatName.split(',').includes('mov')) {
    const brand = probe.brand ?? 'qt';
    // 3GP and Motion JPEG 2000 share the demuxer but are not the MP4 or MOV the rule names.
    if (/^3g/i.test(brand)) return { id: 'other', label: '3GP' };
    if (/^mj/i.test(brand)) return { id: 'other', label: 'Motion JPEG 2000' };
    if (brand === 'qt') return { id: 'mov', label: 'MOV' };
    return { id: 'mp4', label: brand === 'M4A' ? 'M4A' : 'MP4' };
  }
  return { id: BY_DEMUXER.get(probe.formatName) ?? 'other', label: LABELS.get(probe.formatName) ?? printable(probe.formatName) };
}

/**
 * The demuxers ffprobe and ffmpeg may open a stored file with (their `-format_whitelist`): those
 * of the accepted formats, and single-file containers and pictures the refusal names. Never a
 * playlist or indirection demuxer (hls, dash, concat, image2 with its file patterns, imf…): those
 * open other files or URLs the file names, which would tell a tenant what the server's disk holds.
 * The ISO base media demuxer (`mov`) follows external data references only when asked to.
 */
export const READABLE_DEMUXERS: readonly string[] = [
  ...['wav', 'flac', 'aac', 'mp3', 'mov', 'png_pipe', 'jpeg_pipe'],
  ...['ogg', 'matroska', 'avi', 'asf', 'flv', 'mpegts', 'mpeg', 'aiff', 'caf', 'w64', 'amr'],
  ...['gif', 'apng', 'webp_pipe', 'bmp_pipe', 'tiff_pipe'],
];

// ---- codecs ---------------------------------------------------------------------------------

const PCM = /^(pcm|adpcm)_/;

/** The audio codecs each audio container may hold for the file to import as audio. */
const AUDIO_CODECS: ReadonlyMap<Container, (codec: string) => boolean> = new Map([
  // "WAV" means uncompressed or near-uncompressed sound: any PCM layout, a-law/µ-law and ADPCM.
  ['wav', (c: string) => PCM.test(c)],
  ['flac', (c: string) => c === 'flac'],
  ['adts', (c: string) => c === 'aac'],
  ['mpeg-audio', (c: string) => c === 'mp3'],
  // An audio-only MP4/M4A/MOV is the usual home of AAC; other codecs in it (ALAC, PCM) are not named by the rule.
  ['mp4', (c: string) => c === 'aac'],
  ['mov', (c: string) => c === 'aac'],
]);

const VIDEO_CODECS = new Set(['h264', 'hevc']);
const IMAGE_CODECS = new Set(['png', 'mjpeg']);

const CODEC_LABELS: ReadonlyMap<string, string> = new Map([
  ['h264', 'H.264'],
  ['hevc', 'HEVC'],
  ['mpeg4', 'MPEG-4 Part 2'],
  ['mpeg2video', 'MPEG-2'],
  ['mpeg1video', 'MPEG-1'],
  ['vp8', 'VP8'],
  ['vp9', 'VP9'],
  ['av1', 'AV1'],
  ['prores', 'ProRes'],
  ['theora', 'Theora'],
  ['mjpeg', 'Motion JPEG'],
  ['aac', 'AAC'],
  ['mp3', 'MP3'],
  ['mp2', 'MP2'],
  ['flac', 'FLAC'],
  ['alac', 'ALAC'],
  ['opus', 'Opus'],
  ['vorbis', 'Vorbis'],
  ['ac3', 'AC-3'],
  ['eac3', 'E-AC-3'],
  ['png', 'PNG'],
  ['apng', 'APNG'],
  ['gif', 'GIF'],
  ['webp', 'WebP'],
  ['bmp', 'BMP'],
  ['tiff', 'TIFF'],
]);

const codecLabel = (codec: string): string =>
  CODEC_LABELS.get(codec) ?? (codec.startsWith('pcm_') ? 'PCM' : codec.startsWith('adpcm_') ? 'ADPCM' : printable(codec));

// ---- the rule -------------------------------------------------------------------------------

/** Whether a probed file imports, and as what; a refusal carries the file's `error_message`. */
export function acceptMedia(probe: ProbedMedia): MediaAcceptance {
  const container = containerOf(probe);
  const { audioCodecs, videoCodecs } = probe;
  switch (probe.type) {
    case 'other':
      return { error_message: NO_MEDIA_STREAM };
    case 'audio': {
      const allowed = AUDIO_CODECS.get(container.id);
      if (allowed && audioCodecs.length > 0 && audioCodecs.every(allowed)) return { type: 'audio' };
      break;
    }
    case 'video':
      // The rule is about the picture: next to H.264 or HEVC any sound ffmpeg decodes is kept
      // (AAC, MP3, ALAC, PCM are all common in camera and phone files).
      if ((container.id === 'mp4' || container.id === 'mov') && videoCodecs.length > 0 && videoCodecs.every((c) => VIDEO_CODECS.has(c))) {
        return { type: 'video' };
      }
      break;
    case 'image':
      if (container.id === 'still' && videoCodecs.length === 1 && IMAGE_CODECS.has(videoCodecs[0])) return { type: 'image' };
      break;
    default:
      return assertNever(probe.type);
  }
  return { error_message: `unsupported media: ${describe(probe, container.label)}; supported are ${SUPPORTED_MEDIA}` };
}

/** "Ogg container with Opus audio", "MP4 container with MPEG-4 Part 2 video and AAC audio", "GIF image". */
function describe(probe: ProbedMedia, containerLabel: string): string {
  const picture = probe.videoCodecs[0];
  // Stills and animations (GIF, APNG, WebP) are named as pictures, whatever the prober's type.
  if (picture !== undefined && probe.audioCodecs.length === 0 && /^(image2|[a-z0-9]+_pipe|gif|apng)$/.test(probe.formatName)) {
    return `${codecLabel(picture)} image`;
  }
  const streams = [
    ...(probe.videoCodecs.length > 0 ? [`${labels(probe.videoCodecs)} video`] : []),
    ...(probe.audioCodecs.length > 0 ? [`${labels(probe.audioCodecs)} audio`] : []),
  ];
  return streams.length > 0 ? `${containerLabel} container with ${streams.join(' and ')}` : `${containerLabel} container`;
}

const labels = (codecs: readonly string[]): string => [...new Set(codecs.map(codecLabel))].join(', ');

/** ffprobe's names are short identifiers; anything else (a damaged or crafted output) is not echoed. */
const printable = (name: string): string => (/^[A-Za-z0-9_.,-]{1,40}$/.test(name) ? name : 'unknown');
