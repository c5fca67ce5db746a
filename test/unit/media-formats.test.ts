import assert from 'node:assert/strict';
import { acceptMedia, NO_MEDIA_STREAM, SUPPORTED_MEDIA } from '../../lib/domain/media-formats';
import type { ProbeResult } from '../../lib/ports/media';

const ISO = 'mov,mp4,m4a,3gp,3g2,mj2';

/** A ProbeResult as the ffprobe adapter builds it; only the fields the rule reads vary. */
function probe(fields: Pick<ProbeResult, 'type' | 'formatName'> & Partial<ProbeResult>): ProbeResult {
  const audioCodecs = fields.audioCodecs ?? [];
  const videoCodecs = fields.videoCodecs ?? [];
  return {
    hasAudio: audioCodecs.length > 0,
    hasVideo: fields.type === 'video',
    ...(fields.type !== 'image' && { durationSeconds: 1 }),
    audioCodecs,
    videoCodecs,
    ...fields,
  };
}

const audio = (formatName: string, codec: string, brand?: string) =>
  probe({ type: 'audio', formatName, audioCodecs: [codec], ...(brand && { brand }) });
const video = (formatName: string, videoCodecs: string[], audioCodecs: string[] = [], brand?: string) =>
  probe({ type: 'video', formatName, videoCodecs, audioCodecs, ...(brand && { brand }) });
const image = (formatName: string, codec: string) => probe({ type: 'image', formatName, videoCodecs: [codec] });
const refusal = (what: string) => ({ error_message: `unsupported media: ${what}; supported are ${SUPPORTED_MEDIA}` });

describe('media formats: acceptMedia', () => {
  describe('imports', () => {
    const accepted: [string, ProbeResult, 'audio' | 'video' | 'image'][] = [
      ['WAV with 16-bit PCM', audio('wav', 'pcm_s16le'), 'audio'],
      ['WAV with float PCM', audio('wav', 'pcm_f32le'), 'audio'],
      ['WAV with µ-law', audio('wav', 'pcm_mulaw'), 'audio'],
      ['WAV with ADPCM', audio('wav', 'adpcm_ms'), 'audio'],
      ['FLAC', audio('flac', 'flac'), 'audio'],
      ['raw ADTS AAC', audio('aac', 'aac'), 'audio'],
      ['MP3', audio('mp3', 'mp3'), 'audio'],
      // The prober leaves cover art out of videoCodecs and calls the file audio.
      ['MP3 with cover art', probe({ type: 'audio', formatName: 'mp3', audioCodecs: ['mp3'], hasVideo: false }), 'audio'],
      ['M4A with AAC', audio(ISO, 'aac', 'M4A'), 'audio'],
      ['an audio-only MP4 with AAC', audio(ISO, 'aac', 'isom'), 'audio'],
      ['an audio-only QuickTime file without a brand', audio(ISO, 'aac'), 'audio'],
      ['MP4 with H.264 and AAC', video(ISO, ['h264'], ['aac'], 'isom'), 'video'],
      ['MP4 (mp42) with H.264 and no sound', video(ISO, ['h264'], [], 'mp42'), 'video'],
      ['M4V with H.264', video(ISO, ['h264'], ['aac'], 'M4V'), 'video'],
      ['MOV with H.264 and PCM', video(ISO, ['h264'], ['pcm_s16le'], 'qt'), 'video'],
      ['MP4 with HEVC and ALAC', video(ISO, ['hevc'], ['alac'], 'isom'), 'video'],
      ['MOV with HEVC and MP3', video(ISO, ['hevc'], ['mp3'], 'qt'), 'video'],
      ['PNG', image('png_pipe', 'png'), 'image'],
      ['PNG read by the image2 demuxer', image('image2', 'png'), 'image'],
      ['JPEG', image('jpeg_pipe', 'mjpeg'), 'image'],
      ['JPEG read by the image2 demuxer', image('image2', 'mjpeg'), 'image'],
    ];
    for (const [name, result, type] of accepted) {
      it(`${name} as ${type}`, () => assert.deepEqual(acceptMedia(result), { type }));
    }
  });

  describe('refuses, naming what the file is', () => {
    it('Opus in Ogg, with the whole list of what is supported', () =>
      assert.deepEqual(acceptMedia(audio('ogg', 'opus')), {
        error_message:
          'unsupported media: Ogg container with Opus audio; supported are WAV, FLAC, AAC, MP3, H.264 or HEVC video in MP4 or MOV, PNG and JPEG images',
      }));

    it('a file with no audio, video or image stream', () =>
      assert.deepEqual(acceptMedia(probe({ type: 'other', formatName: 'srt' })), { error_message: NO_MEDIA_STREAM }));

    const refused: [string, ProbeResult, string][] = [
      ['Vorbis in Ogg', audio('ogg', 'vorbis'), 'Ogg container with Vorbis audio'],
      ['FLAC in Ogg', audio('ogg', 'flac'), 'Ogg container with FLAC audio'],
      ['WebM with VP9 and Opus', video('matroska,webm', ['vp9'], ['opus']), 'Matroska/WebM container with VP9 video and Opus audio'],
      ['MKV with H.264', video('matroska,webm', ['h264'], ['aac']), 'Matroska/WebM container with H.264 video and AAC audio'],
      ['Matroska audio', audio('matroska,webm', 'flac'), 'Matroska/WebM container with FLAC audio'],
      ['AVI with MPEG-4 Part 2', video('avi', ['mpeg4'], ['mp3']), 'AVI container with MPEG-4 Part 2 video and MP3 audio'],
      ['AVI with Motion JPEG', video('avi', ['mjpeg']), 'AVI container with Motion JPEG video'],
      ['MPEG-TS with H.264', video('mpegts', ['h264'], ['aac']), 'MPEG-TS container with H.264 video and AAC audio'],
      ['MP4 with MPEG-4 Part 2', video(ISO, ['mpeg4'], ['aac'], 'isom'), 'MP4 container with MPEG-4 Part 2 video and AAC audio'],
      ['MP4 with VP9', video(ISO, ['vp9'], [], 'isom'), 'MP4 container with VP9 video'],
      ['MP4 with AV1', video(ISO, ['av1'], ['opus'], 'iso6'), 'MP4 container with AV1 video and Opus audio'],
      ['MOV with ProRes', video(ISO, ['prores'], ['pcm_s24le'], 'qt'), 'MOV container with ProRes video and PCM audio'],
      [
        'MP4 with H.264 next to a second, MPEG-4 picture track',
        video(ISO, ['h264', 'mpeg4'], [], 'isom'),
        'MP4 container with H.264, MPEG-4 Part 2 video',
      ],
      ['3GP with H.264', video(ISO, ['h264'], ['aac'], '3gp6'), '3GP container with H.264 video and AAC audio'],
      ['Motion JPEG 2000', video(ISO, ['jpeg2000'], [], 'mjp2'), 'Motion JPEG 2000 container with jpeg2000 video'],
      ['M4A with ALAC', audio(ISO, 'alac', 'M4A'), 'M4A container with ALAC audio'],
      ['an audio-only MOV with PCM', audio(ISO, 'pcm_s16le', 'qt'), 'MOV container with PCM audio'],
      ['MP3 inside WAV', audio('wav', 'mp3'), 'WAV container with MP3 audio'],
      ['GSM inside WAV', audio('wav', 'gsm_ms'), 'WAV container with gsm_ms audio'],
      ['MPEG layer 2 audio', audio('mp3', 'mp2'), 'MPEG audio container with MP2 audio'],
      ['AAC in a FLAC container', audio('flac', 'aac'), 'FLAC container with AAC audio'],
      ['AIFF', audio('aiff', 'pcm_s16be'), 'AIFF container with PCM audio'],
      ['WMA', audio('asf', 'wmav2'), 'ASF (WMA/WMV) container with wmav2 audio'],
      ['a single-frame GIF', image('gif', 'gif'), 'GIF image'],
      ['an animated GIF', video('gif', ['gif']), 'GIF image'],
      ['an animated PNG', video('apng', ['apng']), 'APNG image'],
      ['WebP', image('webp_pipe', 'webp'), 'WebP image'],
      ['BMP', image('bmp_pipe', 'bmp'), 'BMP image'],
      ['BMP read by the image2 demuxer', image('image2', 'bmp'), 'BMP image'],
      ['TIFF', image('tiff_pipe', 'tiff'), 'TIFF image'],
    ];
    for (const [name, result, what] of refused) {
      it(name, () => assert.deepEqual(acceptMedia(result), refusal(what)));
    }
  });

  describe('never trusts a probe blindly', () => {
    it('refuses an audio probe that names no audio codec', () =>
      assert.deepEqual(acceptMedia(probe({ type: 'audio', formatName: 'wav' })), refusal('WAV container')));

    it('refuses a video probe that names no video codec', () =>
      assert.deepEqual(acceptMedia(probe({ type: 'video', formatName: ISO, brand: 'isom' })), refusal('MP4 container')));

    it('refuses a PNG-coded picture that did not come from an image demuxer', () =>
      assert.ok('error_message' in acceptMedia(image('matroska,webm', 'png'))));

    it('does not echo names that are not ffprobe identifiers, such as a path', () => {
      const result = acceptMedia(audio('/srv/media/drive-1/secret.bin', '/srv/media/x'));
      assert.deepEqual(result, refusal('unknown container with unknown audio'));
    });
  });
});
