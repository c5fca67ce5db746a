import assert from 'node:assert/strict';
import {
  addMarker,
  type Clip,
  clipSpans,
  compositionDuration,
  compositionMediaType,
  compositionRangesOf,
  compositionTranscript,
  cutMarkers,
  cutRange,
  cutRanges,
  cutRangesMarkers,
  cutsInPlace,
  insertClips,
  insertMarkers,
  keepMarkers,
  keepRange,
  mediaAt,
  mergeRanges,
  type Marker,
  removeClipMarkers,
  removeClips,
  reorderClips,
  reorderMarkers,
  sequenceWords,
  type Word,
} from '../../lib/domain/edl';

const clip = (media: string, from: number, to: number): Clip => ({ media, in: from, out: to });
const marker = (time: number, label = `m${time}`): Marker => ({ time, label });
const word = (text: string, start: number, end: number, speaker: string | null = null): Word => ({
  text,
  start,
  end,
  confidence: 0.9,
  speaker,
});
/** True when `x` carries no float dust below a millisecond. */
const onMs = (x: number) => x === Math.round(x * 1000) / 1000;

// A 0–10, B 0–5, C 2–6: composition time 0–10 is A, 10–15 is B, 15–19 is C.
const A = clip('a.mp4', 0, 10);
const B = clip('b.wav', 0, 5);
const C = clip('c.wav', 2, 6);

describe('edit decision lists', () => {
  describe('cutting a range', () => {
    it('splits a clip cut in the middle', () => assert.deepEqual(cutRange([A], 3, 4), [clip('a.mp4', 0, 3), clip('a.mp4', 4, 10)]));
    it('cuts across several clips, trimming the first and last', () =>
      assert.deepEqual(cutRange([A, B, C], 8, 16), [clip('a.mp4', 0, 8), clip('c.wav', 3, 6)]));
    it('removes whole clips when cut at exact boundaries, leaving the neighbours as they were', () => {
      const out = cutRange([A, B, C], 10, 15);
      assert.deepEqual(out, [A, C]);
      assert.equal(out[0], A);
    });
    it('leaves nothing when the whole composition is cut', () => assert.deepEqual(cutRange([A, B, C], 0, 19), []));
    it('rounds split points to milliseconds', () => {
      // 0.1 + 0.2 is 0.30000000000000004 in floating point.
      assert.deepEqual(cutRange([clip('a', 0.1, 1)], 0.2, 0.5), [clip('a', 0.1, 0.3), clip('a', 0.6, 1)]);
    });
    it('accumulates no float dust over many cuts', () => {
      let clips: Clip[] = [clip('a', 0.1, 60.1)];
      for (let i = 0; i < 50; i++) clips = cutRange(clips, 0.7 + i * 0.3, 0.8 + i * 0.3);
      for (const c of clips) assert.ok(onMs(c.in) && onMs(c.out), `${c.in}–${c.out} is not on a millisecond`);
      assert.equal(compositionDuration(clips), 55);
    });
    it('drops a piece shorter than a millisecond', () => assert.deepEqual(cutRange([A], 0.0004, 5), [clip('a.mp4', 5, 10)]));
  });

  describe('keeping a range', () => {
    it('keeps the middle of one clip', () => assert.deepEqual(keepRange([A, B], 2, 3), [clip('a.mp4', 2, 3)]));
    it('keeps across clips, trimming the ends', () =>
      assert.deepEqual(keepRange([A, B, C], 8, 12), [clip('a.mp4', 8, 10), clip('b.wav', 0, 2)]));
    it('keeps whole clips at exact boundaries', () => assert.deepEqual(keepRange([A, B, C], 10, 19), [B, C]));
  });

  describe('inserting, removing and reordering clips', () => {
    const X = clip('x.wav', 1, 2);
    it('splits the clip playing at the insertion time', () =>
      assert.deepEqual(insertClips([A, B], 4, [X]), [clip('a.mp4', 0, 4), X, clip('a.mp4', 4, 10), B]));
    it('inserts between clips at a boundary, at the start and at the end', () => {
      assert.deepEqual(insertClips([A, B], 10, [X]), [A, X, B]);
      assert.deepEqual(insertClips([A, B], 0, [X]), [X, A, B]);
      assert.deepEqual(insertClips([A, B], 15, [X]), [A, B, X]);
      assert.deepEqual(insertClips([], 0, [X]), [X]);
    });
    it('removes clips by index', () => assert.deepEqual(removeClips([A, B, C], [2, 0]), [B]));
    it('reorders by a permutation of the indexes', () => assert.deepEqual(reorderClips([A, B, C], [2, 0, 1]), [C, A, B]));
  });

  describe('markers', () => {
    it('adds a marker in time order, after markers at the same time', () =>
      assert.deepEqual(addMarker([marker(1), marker(5, 'x')], marker(5, 'y')), [marker(1), marker(5, 'x'), marker(5, 'y')]));
    it('cutting drops markers inside the range, keeps those on its edges at the join, moves later ones left', () =>
      assert.deepEqual(cutMarkers([marker(1), marker(2), marker(3), marker(4), marker(6)], 2, 4), [
        marker(1),
        marker(2),
        marker(2, 'm4'),
        marker(4, 'm6'),
      ]));
    it('keeping drops markers outside the range and moves the rest left', () =>
      assert.deepEqual(keepMarkers([marker(1), marker(2), marker(3.5), marker(4), marker(6)], 2, 4), [
        marker(0, 'm2'),
        marker(1.5, 'm3.5'),
        marker(2, 'm4'),
      ]));
    it('inserting moves markers at or after the insertion time', () =>
      assert.deepEqual(insertMarkers([marker(1), marker(2), marker(3)], 2, 0.5), [marker(1), marker(2.5, 'm2'), marker(3.5, 'm3')]));
    it('removing clips drops markers inside them and moves later ones left', () =>
      // B spans 10–15, C 15–19.
      assert.deepEqual(removeClipMarkers([A, B, C], [marker(5), marker(12), marker(16), marker(19)], [1]), [
        marker(5),
        marker(11, 'm16'),
        marker(14, 'm19'),
      ]));
    it('reordering moves each marker with its clip; one at the very end stays with the last clip', () =>
      // New order C (0–4), A (4–14), B (14–19).
      assert.deepEqual(reorderMarkers([A, B, C], [marker(1), marker(10), marker(16), marker(19)], [2, 0, 1]), [
        marker(1, 'm16'),
        marker(4, 'm19'),
        marker(5, 'm1'),
        marker(14, 'm10'),
      ]));
  });

  describe('measures', () => {
    it('adds clip lengths to a duration rounded to milliseconds', () => {
      assert.equal(compositionDuration([clip('a', 0, 0.1), clip('b', 0, 0.2)]), 0.3);
      assert.equal(compositionDuration([]), 0);
    });
    it('places clips end to end', () =>
      assert.deepEqual(clipSpans([A, B, C]), [
        { start: 0, end: 10 },
        { start: 10, end: 15 },
        { start: 15, end: 19 },
      ]));
    it('is video when any clip has video', () => {
      const hasVideo = (m: string) => m.endsWith('.mp4');
      assert.equal(compositionMediaType([B, A], hasVideo), 'video');
      assert.equal(compositionMediaType([B, C], hasVideo), 'audio');
    });
  });

  describe('transcript', () => {
    const words = new Map<string, Word[]>([
      ['a', [word('hello', 0.5, 0.9), word('um', 1.0, 1.4), word('world', 1.8, 2.4), word('late', 3.0, 3.5)]],
      ['b', [word('bee', 0.2, 0.4)]],
    ]);
    const wordsOf = (m: string) => words.get(m);
    const texts = (ws: Word[]) => ws.map((w) => w.text);

    it('shifts each clip’s words to composition time and drops words outside the clips', () =>
      assert.deepEqual(compositionTranscript([clip('a', 0.4, 2.0), clip('a', 3.0, 4.0)], wordsOf), [
        word('hello', 0.1, 0.5),
        word('um', 0.6, 1),
        word('late', 1.6, 2.1),
      ]));
    it('gives a word straddling a clip edge to the side holding its midpoint, clamped to the clip', () => {
      assert.deepEqual(compositionTranscript([clip('a', 2.05, 2.3)], wordsOf), [word('world', 0, 0.25)]);
      assert.deepEqual(compositionTranscript([clip('a', 2.15, 2.3)], wordsOf), []);
    });
    it('never loses or duplicates a word when a clip is split anywhere', () => {
      const whole = texts(compositionTranscript([clip('a', 0, 4)], wordsOf));
      for (let t = 0.05; t < 4; t += 0.1) assert.deepEqual(texts(compositionTranscript(cutRange([clip('a', 0, 4)], t, t), wordsOf)), whole);
      for (let t = 0.1; t < 4; t += 0.1)
        assert.deepEqual(texts(compositionTranscript(insertClips([clip('a', 0, 4)], t, []), wordsOf)), whole);
    });
    it('finds the same words by its start-order window as by looking at every word: long words, unsorted lists, many clips', () => {
      // A long word that starts well before a clip but has its midpoint inside it, and words out of order.
      const sorted = [word('long', 0, 6), word('a', 1, 1.2), word('b', 2.9, 3.1), word('c', 3.2, 3.3), word('d', 7, 7.5)];
      const unsorted = [sorted[3], sorted[0], sorted[4], sorted[1], sorted[2]];
      const brute = (clips: ReturnType<typeof clip>[], list: Word[]) =>
        clips.flatMap((c) =>
          list
            .filter((w) => (w.start + w.end) / 2 >= c.in && (w.start + w.end) / 2 < c.out)
            .map((w) => w.text)
            .sort(),
        );
      for (const list of [sorted, unsorted]) {
        for (let from = 0; from < 8; from += 0.5) {
          for (let to = from + 0.25; to <= 8; to += 0.75) {
            const clips = [clip('a', from, to), clip('a', 0, from)];
            const got = compositionTranscript(clips, () => list);
            assert.deepEqual(
              [...texts(got.slice(0, got.length - brute([clips[1]], list).length))].sort(),
              brute([clips[0]], list),
              `[${from}, ${to})`,
            );
            assert.equal(got.length, brute(clips, list).length);
          }
        }
      }
    });
    it('follows clips across media and skips media without a transcript', () =>
      assert.deepEqual(texts(compositionTranscript([clip('b', 0, 1), clip('none', 0, 5), clip('a', 0.4, 1)], wordsOf)), ['bee', 'hello']));

    describe('of a multitrack sequence', () => {
      const trackWords = new Map<string, Word[]>([
        ['cam-a.mp4', [word('hi', 0, 0.5, 'spk0'), word('yes', 2, 2.5)]],
        ['cam-b.mp4', [word('hello', 0, 0.4)]],
      ]);
      const tracks = [
        { media: 'cam-a.mp4', offset: 0 },
        { media: 'cam-b.mp4', offset: 1.5 },
      ];
      it('shifts each track by its offset, names the speaker after the track and merges by start', () =>
        assert.deepEqual(
          sequenceWords(tracks, (m) => trackWords.get(m)),
          [word('hi', 0, 0.5, 'cam-a.mp4'), word('hello', 1.5, 1.9, 'cam-b.mp4'), word('yes', 2, 2.5, 'cam-a.mp4')],
        ));
      it('takes speaker labels from the caller and feeds a composition transcript', () => {
        const labels = ['Host', 'Guest'];
        const seq = sequenceWords(
          tracks,
          (m) => trackWords.get(m),
          (i) => labels[i],
        );
        const transcript = compositionTranscript([clip('seq', 1, 3)], (m) => (m === 'seq' ? seq : undefined));
        assert.deepEqual(transcript, [word('hello', 0.5, 0.9, 'Guest'), word('yes', 1, 1.5, 'Host')]);
      });
    });
  });

  describe('many cuts', () => {
    /** The cut as it was written first, walking every clip: the meaning history replays with. */
    const reference = (clips: readonly Clip[], from: number, to: number): Clip[] => {
      const spans = clipSpans(clips);
      const ms = (x: number) => Math.round(x * 1000) / 1000 + 0;
      const piece = (c: Clip, a: number, b: number) => {
        const p = clip(c.media, ms(c.in + a), ms(c.in + b));
        return ms(p.out - p.in) >= 0.001 ? [p] : [];
      };
      return clips.flatMap((c, i) => {
        const { start, end } = spans[i];
        if (end <= from || start >= to) return [c];
        return [...(start < from ? piece(c, 0, from - start) : []), ...(end > to ? piece(c, to - start, end - start) : [])];
      });
    };
    const cuts = Array.from({ length: 2000 }, (_, i): [number, number] => {
      const from = ((i * 7919) % 1000) / 100 + (i % 5) * 0.0007;
      return [from, from + (i % 9 === 0 ? 0.2501 : 0.0123)];
    });
    it('cuts as the clip-by-clip walk did, cut after cut (split points, whole clips, pieces under 1 ms)', () => {
      let fast: Clip[] = [A, B, C];
      let slow: Clip[] = [A, B, C];
      for (const [from, to] of cuts.slice(0, 600)) {
        fast = cutRange(fast, from, to);
        slow = reference(slow, from, to);
      }
      assert.deepEqual(fast, slow);
      assert.ok(fast.length > 100, `${fast.length} clips`);
    });
    it('cuts in place as cutRange does one cut after another', () => {
      const buffer = cutsInPlace([A, B, C]);
      let one: Clip[] = [A, B, C];
      for (const [from, to] of cuts) {
        buffer.cut(from, to);
        one = cutRange(one, from, to);
      }
      const list = buffer.done();
      assert.deepEqual(list, one);
      assert.deepEqual(clipSpans(list), clipSpans(one));
      assert.deepEqual(cutRange(list, 1, 2), cutRange(one, 1, 2), 'a list handed over cuts as any other');
    });
    it('cuts several ranges at once as if cut from the last to the first, merging those that overlap', () => {
      const ranges = [
        { from: 12, to: 16 },
        { from: 1, to: 2 },
        { from: 1.5, to: 3 },
      ];
      assert.deepEqual(mergeRanges(ranges), [
        { from: 1, to: 3 },
        { from: 12, to: 16 },
      ]);
      assert.deepEqual(cutRanges([A, B, C], ranges), cutRange(cutRange([A, B, C], 12, 16), 1, 3));
      assert.deepEqual(cutRangesMarkers([marker(0.5), marker(2), marker(14), marker(18)], ranges), [marker(0.5), marker(12, 'm18')]);
    });
    it('moves and drops markers as cutMarkers does range after range, the last first (ends, inside, off the millisecond)', () => {
      const markers = Array.from({ length: 400 }, (_, i) => marker(((i * 6271) % 2000) / 100 + (i % 3) * 0.0004));
      // Ranges whose ends fall on markers, overlap, touch, and carry float dust.
      const ranges = cuts
        .slice(0, 80)
        .map(([from, to], i) => (i % 7 === 0 ? { from: markers[i].time, to: markers[i].time + 0.5 } : { from, to }));
      const oneByOne = mergeRanges(ranges).reduceRight<Marker[]>((out, r) => cutMarkers(out, r.from, r.to), [...markers]);
      const atOnce = cutRangesMarkers(markers, ranges);
      assert.deepEqual(atOnce, oneByOne);
      assert.ok(atOnce.length > 20 && atOnce.length < markers.length, `${atOnce.length} of ${markers.length} markers kept`);
    });
  });

  describe('media time and composition time', () => {
    // A 0–10 | A 12–14 (the same media again) | B 1–3: composition 0–10, 10–12, 12–14.
    const clips = [A, clip('a.mp4', 12, 14), clip('b.wav', 1, 3)];
    it('tells the clip and media time playing at a composition time', () => {
      assert.deepEqual(mediaAt(clips, 0), { clip: 0, media: 'a.mp4', time: 0 });
      assert.deepEqual(mediaAt(clips, 10), { clip: 1, media: 'a.mp4', time: 12 }, 'a join belongs to the clip starting there');
      assert.deepEqual(mediaAt(clips, 12.5), { clip: 2, media: 'b.wav', time: 1.5 });
      assert.deepEqual(mediaAt(clips, 14), { clip: 2, media: 'b.wav', time: 3 }, 'the very end belongs to the last clip');
      assert.equal(mediaAt(clips, 14.001), null);
      assert.equal(mediaAt(clips, -1), null);
      assert.equal(mediaAt([], 0), null);
    });
    it('tells the composition ranges a media range occupies: several when it plays twice, none when cut', () => {
      assert.deepEqual(compositionRangesOf(clips, 'a.mp4', 9, 13), [{ from: 9, to: 11 }], 'played on across the join');
      assert.deepEqual(compositionRangesOf([A, clip('b.wav', 0, 1), clip('a.mp4', 3, 4)], 'a.mp4', 3.5, 5), [
        { from: 3.5, to: 5 },
        { from: 11.5, to: 12 },
      ]);
      assert.deepEqual(compositionRangesOf(cutRange([A], 2, 4), 'a.mp4', 2.5, 3.5), []);
      assert.deepEqual(compositionRangesOf(clips, 'b.wav', 0, 1.25), [{ from: 12, to: 12.25 }]);
    });
    it('maps a composition time to media and back to the same composition time', () => {
      const cut = cutRanges(
        [A, B, C],
        [
          { from: 2.5, to: 3 },
          { from: 11, to: 16.25 },
        ],
      );
      for (let t = 0; t < compositionDuration(cut); t += 0.25) {
        const at = mediaAt(cut, t)!;
        const back = compositionRangesOf(cut, at.media, at.time, at.time + 0.001);
        assert.ok(
          back.some((r) => r.from === Math.round(t * 1000) / 1000),
          `t=${t}: ${JSON.stringify(back)}`,
        );
      }
    });
  });
});
