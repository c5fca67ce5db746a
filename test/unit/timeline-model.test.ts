import assert from 'node:assert/strict';
import type { Clip } from '../../lib/domain/edl';
import type { SequenceTrack } from '../../lib/domain/import';
import { frameTimeline, type FramedClip, type Rate, type TimelineMedia } from '../../lib/domain/timeline/model';

/**
 * Issue 22 item 6: a composition framed for the timeline formats, with multitrack sequences. A
 * sequence clip [in, out) plays every track over that span of sequence time, track k from its
 * offset, so each track that sounds in it becomes a framed clip on lane k, starting later in the
 * record when the track starts inside the clip, and ending when its media ends.
 */
describe('timeline model: sequences on lanes', () => {
  const file = (ref: string, duration: number | null, has_video = false, rate: Rate | null = null): TimelineMedia => ({
    ref,
    file: `${ref}.m4a`,
    duration,
    has_video,
    has_audio: duration !== null,
    rate,
  });
  const ANA = file('ana', 60);
  const BEN = file('ben', 60);

  /** Given these files and sequences, when the clips are framed: the framed clips, in record order. */
  function given(files: TimelineMedia[], sequences: Record<string, SequenceTrack[]> = {}) {
    return {
      when: (clips: Clip[]) =>
        frameTimeline({
          name: 'Podcast',
          width: 1920,
          height: 1080,
          clips,
          markers: [],
          media: new Map(files.map((m) => [m.ref, m])),
          sequences: new Map(Object.entries(sequences)),
        }),
    };
  }
  /** A framed clip as the tests spell it: lane, file ref, source and record frames. */
  const brief = (c: FramedClip) => [c.lane, c.media.ref, c.sourceIn, c.sourceOut, c.recordIn, c.recordOut];

  it('leaves plain clips on lane 0, laid end to end as before', () => {
    const t = given([ANA]).when([
      { media: 'ana', in: 1, out: 3 },
      { media: 'ana', in: 10, out: 10.5 },
    ]);
    assert.deepEqual(t.clips.map(brief), [
      [0, 'ana', 25, 75, 0, 50],
      [0, 'ana', 250, 263, 50, 63],
    ]);
    assert.equal(t.length, 63);
  });

  it('rounds each clip edge where it falls in the composition, so clips shorter than a frame add up to the composition (no drift)', () => {
    const tick = file('tick', 0.05);
    const framed = given([tick]).when(Array.from({ length: 40 }, () => ({ media: 'tick', in: 0, out: 0.05 })));
    assert.equal(framed.length, 50, '40 × 0.05 s = 2 s = 50 frames at 25 fps (adding rounded lengths made 40)');
    assert.equal(framed.clips.at(-1)!.recordOut, 50);
    for (const [i, c] of framed.clips.entries()) {
      if (i > 0) assert.equal(c.recordIn, framed.clips[i - 1].recordOut, 'end to end');
      // The file's one frame, held for a second record frame where the edges round that way.
      assert.deepEqual([c.sourceIn, c.sourceOut - c.sourceIn], [0, c.recordOut - c.recordIn], brief(c).join(' '));
    }
    // Cuts between frames: each edge is its composition time rounded, so the timeline ends where the composition does.
    const cuts = given([ANA]).when([
      { media: 'ana', in: 0, out: 1.013 },
      { media: 'ana', in: 3.777, out: 12.345 },
      { media: 'ana', in: 12.9, out: 20.02 },
    ]);
    const total = 1.013 + (12.345 - 3.777) + (20.02 - 12.9);
    assert.deepEqual(
      cuts.clips.map((c) => [c.recordIn, c.recordOut]),
      [
        [0, 25],
        [25, 240],
        [240, Math.round(total * 25)],
      ],
    );
  });

  it('plays each track of a sequence on its own lane over the same record frames', () => {
    const t = given([ANA, BEN], {
      pod: [
        { media: 'ana', offset: 0 },
        { media: 'ben', offset: 0 },
      ],
    }).when([
      { media: 'ana', in: 0, out: 2 },
      { media: 'pod', in: 4, out: 6 },
    ]);
    assert.deepEqual(t.clips.map(brief), [
      [0, 'ana', 0, 50, 0, 50],
      [0, 'ana', 100, 150, 50, 100],
      [1, 'ben', 100, 150, 50, 100],
    ]);
    assert.equal(t.length, 100, 'the sequence clip is as long as its span, not as its tracks together');
  });

  it('starts a track with an offset that is not a whole frame at the nearest frame of the record, and seeks its media by the offset', () => {
    const t = given([ANA, BEN], {
      pod: [
        { media: 'ana', offset: 0 },
        { media: 'ben', offset: 1.01 }, // frame 25.25 of the sequence
      ],
    }).when([
      { media: 'pod', in: 0, out: 5 },
      { media: 'pod', in: 2.013, out: 4 }, // ben's media from 1.003 s: frame 25
    ]);
    assert.deepEqual(t.clips.map(brief), [
      [0, 'ana', 0, 125, 0, 125],
      [1, 'ben', 0, 100, 25, 125],
      [0, 'ana', 50, 100, 125, 175],
      [1, 'ben', 25, 75, 125, 175],
    ]);
  });

  it('ends a track shorter than the clip where its media ends, and never past the media’s last frame', () => {
    const t = given([ANA, file('short', 3), file('edge', 2.979)], {
      pod: [
        { media: 'ana', offset: 0 },
        { media: 'short', offset: 0 },
        // 0.019 + 2.979 = 2.998 s rounds to sequence frame 75, but the media has 74 frames (74.475).
        { media: 'edge', offset: 0.019 },
      ],
    }).when([{ media: 'pod', in: 1, out: 6 }]);
    assert.deepEqual(t.clips.map(brief), [
      [0, 'ana', 25, 150, 0, 125],
      [1, 'short', 25, 75, 0, 50],
      [2, 'edge', 25, 74, 0, 49],
    ]);
  });

  it('leaves out a track whose offset is beyond the clip, and one that ended before it', () => {
    const t = given([ANA, BEN, file('intro', 2)], {
      pod: [
        { media: 'ana', offset: 0 },
        { media: 'ben', offset: 10 },
        { media: 'intro', offset: 0 },
      ],
    }).when([{ media: 'pod', in: 3, out: 8 }]);
    assert.deepEqual(t.clips.map(brief), [[0, 'ana', 75, 200, 0, 125]]);
  });

  it('keeps lane 0 for the first track even when it starts later than another track in the clip', () => {
    const t = given([ANA, BEN], {
      pod: [
        { media: 'ana', offset: 2 },
        { media: 'ben', offset: 0 },
      ],
    }).when([
      { media: 'pod', in: 1, out: 4 },
      { media: 'ana', in: 0, out: 1 },
    ]);
    assert.deepEqual(t.clips.map(brief), [
      [1, 'ben', 25, 100, 0, 75],
      [0, 'ana', 0, 50, 25, 75],
      [0, 'ana', 0, 25, 75, 100],
    ]);
  });

  it('leaves out image tracks (the renderer does not play them) and takes the timeline rate from a video track', () => {
    const NTSC: Rate = { num: 30000, den: 1001 };
    const cam = file('cam', 60, true, NTSC);
    const t = given([ANA, cam, file('logo', null)], {
      pod: [
        { media: 'ana', offset: 0 },
        { media: 'cam', offset: 0.5 },
        { media: 'logo', offset: 0 },
      ],
    }).when([{ media: 'pod', in: 0, out: 2 }]);
    assert.deepEqual(t.rate, NTSC);
    assert.equal(t.hasVideo, true);
    // 2 s at 29.97 is frame 60 (59.94); ana has no rate of its own and takes the timeline's.
    assert.deepEqual(t.clips.map(brief), [
      [0, 'ana', 0, 60, 0, 60],
      [1, 'cam', 0, 45, 15, 60],
    ]);
  });

  it('refuses a track whose media is not a file of the project', () => {
    assert.throws(
      () => given([ANA], { pod: [{ media: 'gone', offset: 0 }] }).when([{ media: 'pod', in: 0, out: 1 }]),
      /clip media "gone" is not a media file of the project/,
    );
  });
});
