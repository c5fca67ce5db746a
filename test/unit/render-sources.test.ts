import assert from 'node:assert/strict';
import type { MediaFile } from '../../lib/domain/project';
import { hasVideoContent, missingMedia, renderMediaOf } from '../../lib/domain/render-sources';

const file = (ref: string, over: Partial<MediaFile> = {}): MediaFile => ({
  ref,
  asset_id: null,
  media_type: 'video',
  duration_seconds: 10,
  blob_key: `d/p/${ref}`,
  size_bytes: 1000,
  has_audio: true,
  has_video: true,
  source_url: null,
  language: null,
  tracks: null,
  width: 1920,
  height: 1080,
  frame_rate: 29.97,
  rotation: 90,
  sample_rate: 48_000,
  channels: 2,
  job_id: 'j',
  imported_at: '2026-01-01T00:00:00.000Z',
  ...over,
});
const byRef = (...files: MediaFile[]) => new Map(files.map((f) => [f.ref, f]));

describe('render sources: the project’s media as a render reads them', () => {
  it('takes each file’s blob and the properties stored at import', () => {
    assert.deepEqual(renderMediaOf(byRef(file('cam'))).get('cam'), {
      blob: 'd/p/cam',
      kind: 'video',
      hasAudio: true,
      width: 1920,
      height: 1080,
      rotation: 90,
      frameRate: 29.97,
    });
  });

  it('reads files imported before the properties were stored as having none', () => {
    const { width: _w, height: _h, frame_rate: _f, rotation: _r, sample_rate: _s, channels: _c, ...old } = file('old');
    const source = renderMediaOf(byRef(old as MediaFile)).get('old');
    assert.deepEqual(source && 'width' in source && [source.width, source.height, source.rotation, source.frameRate], [
      null,
      null,
      null,
      null,
    ]);
  });

  it('gives a sequence its tracks with their offsets, and leaves out one whose track cannot be read', () => {
    const media = byRef(
      file('host'),
      file('guest', { media_type: 'audio', has_video: false, width: null, height: null }),
      file('notes', { media_type: 'other', blob_key: 'd/p/notes' }),
      file('pod', {
        media_type: 'sequence',
        blob_key: null,
        tracks: [
          { media: 'host', offset: 0 },
          { media: 'guest', offset: 2.5 },
        ],
      }),
      file('broken', {
        media_type: 'sequence',
        blob_key: null,
        tracks: [
          { media: 'host', offset: 0 },
          { media: 'notes', offset: 1 },
        ],
      }),
    );
    const render = renderMediaOf(media);
    const pod = render.get('pod');
    assert.ok(pod?.kind === 'sequence');
    assert.deepEqual(
      pod.tracks.map((t) => [t.source.blob, t.offset]),
      [
        ['d/p/host', 0],
        ['d/p/guest', 2.5],
      ],
    );
    assert.deepEqual([render.has('notes'), render.has('broken')], [false, false]);
    assert.deepEqual(missingMedia([{ media: 'pod' }, { media: 'notes' }, { media: 'broken' }, { media: 'notes' }], render), [
      'notes',
      'broken',
    ]);
  });

  it('uses a Map: a reference named like an Object property is a reference like any other', () => {
    assert.ok(renderMediaOf(byRef(file('constructor'))).has('constructor'));
    assert.deepEqual(missingMedia([{ media: 'constructor' }], new Map()), ['constructor']);
  });

  describe('video content (what publishes as Video)', () => {
    const audio = (ref: string) => file(ref, { media_type: 'audio', has_video: false, width: null, height: null });
    const sequence = (ref: string, ...tracks: string[]) =>
      file(ref, { media_type: 'sequence', blob_key: null, has_video: false, tracks: tracks.map((media, i) => ({ media, offset: i })) });
    const media = byRef(
      file('cam'),
      file('still', { media_type: 'image', has_video: false, duration_seconds: null }),
      audio('voice'),
      audio('music'),
      file('notes', { media_type: 'other', has_video: false }),
      sequence('pod', 'voice', 'music'),
      sequence('show', 'voice', 'cam'),
      sequence('slides', 'music', 'still'),
    );
    const clip = (ref: string) => ({ media: ref, in: 0, out: 1 });

    it('is a clip of a video file, or of an image (which has no video stream)', () => {
      assert.equal(hasVideoContent([clip('voice'), clip('cam')], media), true);
      assert.equal(hasVideoContent([clip('still')], media), true);
    });

    it('is a clip of a sequence with a video or image track', () => {
      assert.equal(hasVideoContent([clip('show')], media), true);
      assert.equal(hasVideoContent([clip('slides')], media), true);
    });

    it('is not audio files, sequences of audio only, other files, unknown references, or no clips', () => {
      assert.equal(hasVideoContent([clip('voice'), clip('music'), clip('pod'), clip('notes'), clip('gone')], media), false);
      assert.equal(hasVideoContent([], media), false);
    });

    it('reads references from a Map (“constructor” is a media name like any other) and survives a sequence naming itself', () => {
      assert.equal(hasVideoContent([clip('constructor')], media), false);
      assert.equal(hasVideoContent([clip('constructor')], byRef(file('constructor'))), true);
      assert.equal(hasVideoContent([clip('loop')], byRef(sequence('loop', 'loop'))), false);
    });
  });
});
