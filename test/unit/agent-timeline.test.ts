import assert from 'node:assert/strict';
import { applyChange } from '../../lib/domain/agent/apply';
import type { ModelComposition, ProjectModel } from '../../lib/domain/agent/edits';
import { compositionRangesOf, compositionTimesOf, mediaTimeAt, mergeRanges, totalSeconds } from '../../lib/domain/agent/timeline';
import type { Clip } from '../../lib/domain/edl';

const clip = (media: string, from: number, to: number): Clip => ({ media, in: from, out: to });
// Composition time 0–4 is a 2–6, 4–7 is b 0–3, 7–9 is a 5–7 (media a 5–6 plays twice).
const CLIPS = [clip('a', 2, 6), clip('b', 0, 3), clip('a', 5, 7)];

const composition = (over: Partial<ModelComposition> = {}): ModelComposition => ({
  composition_id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  short_id: '0190a',
  name: 'Main',
  revision: 3,
  clips: CLIPS,
  markers: [{ time: 5, label: 'b starts' }],
  audio: { loudness_lufs: null, noise_reduction: false },
  ...over,
});
const model = (c: ModelComposition = composition()): ProjectModel => ({ project_id: 'p', media: [], compositions: [c] });

describe('agent timeline: media time ↔ composition time', () => {
  it('finds the media and media time playing at a composition time', () => {
    assert.deepEqual(mediaTimeAt(CLIPS, 0), { clip: 0, media: 'a', time: 2 });
    assert.deepEqual(mediaTimeAt(CLIPS, 4.5), { clip: 1, media: 'b', time: 0.5 });
    assert.deepEqual(mediaTimeAt(CLIPS, 8.25), { clip: 2, media: 'a', time: 6.25 });
    assert.equal(mediaTimeAt(CLIPS, 9), null, 'the end is past the last clip');
    assert.equal(mediaTimeAt(CLIPS, -1), null);
  });

  it('finds every composition time a media time plays at, none when it was cut', () => {
    assert.deepEqual(compositionTimesOf(CLIPS, 'a', 5.5), [3.5, 7.5]);
    assert.deepEqual(compositionTimesOf(CLIPS, 'a', 1), []);
    assert.deepEqual(compositionTimesOf(CLIPS, 'b', 3), [], 'a clip is [in, out)');
  });

  it('maps a media range to the composition ranges that play it, both ways round trip', () => {
    assert.deepEqual(compositionRangesOf(CLIPS, 'a', { from: 4, to: 6.5 }), [
      { from: 2, to: 4 },
      { from: 7, to: 8.5 },
    ]);
    for (const t of [0, 1.25, 4, 6.999, 8]) {
      const at = mediaTimeAt(CLIPS, t)!;
      assert.ok(compositionTimesOf(CLIPS, at.media, at.time).includes(t), `composition ${t} → media ${at.time} → back`);
    }
  });

  it('merges ranges that overlap or touch, clamped to the duration', () => {
    const merged = mergeRanges(
      [
        { from: 5, to: 6 },
        { from: 1, to: 2 },
        { from: 2, to: 3 },
        { from: 8, to: 12 },
        { from: -1, to: 0.5 },
        { from: 4, to: 4 },
      ],
      9,
    );
    assert.deepEqual(merged, [
      { from: 0, to: 0.5 },
      { from: 1, to: 3 },
      { from: 5, to: 6 },
      { from: 8, to: 9 },
    ]);
    assert.equal(totalSeconds(merged), 4.5);
  });
});

describe('agent applyChange: a later tool call sees earlier ones', () => {
  it('given a composition, when ranges are cut, then clips split, markers move and the revision stays the one the turn read (its edits are planned on it)', () => {
    const after = applyChange(model(), {
      composition_id: composition().composition_id,
      edit: {
        kind: 'cut',
        ranges: [
          { from: 3, to: 4.5 },
          { from: 0, to: 1 },
        ],
      },
    });
    const c = after.compositions[0];
    assert.deepEqual(c.clips, [clip('a', 3, 5), clip('b', 0.5, 3), clip('a', 5, 7)]);
    assert.deepEqual(c.markers, [{ time: 2.5, label: 'b starts' }]);
    assert.equal(c.revision, 3);
  });

  it('given a composition, when an edit changes nothing, then the revision stays (the decider appends nothing)', () => {
    const id = composition().composition_id;
    assert.equal(applyChange(model(), { composition_id: id, edit: { kind: 'rename', name: 'Main' } }).compositions[0].revision, 3);
    assert.equal(applyChange(model(), { composition_id: id, edit: { kind: 'keep', from: 0, to: 9 } }).compositions[0].revision, 3);
  });

  it('keeps, renames, marks, sets audio, deletes and creates', () => {
    const id = composition().composition_id;
    let m = applyChange(model(), { composition_id: id, edit: { kind: 'keep', from: 4, to: 7 } });
    assert.deepEqual(m.compositions[0].clips, [clip('b', 0, 3)]);
    assert.deepEqual(m.compositions[0].markers, [{ time: 1, label: 'b starts' }]);
    m = applyChange(m, { composition_id: id, edit: { kind: 'rename', name: 'Intro' } });
    m = applyChange(m, { composition_id: id, edit: { kind: 'add_markers', markers: [{ time: 0, label: 'start' }] } });
    m = applyChange(m, { composition_id: id, edit: { kind: 'set_audio', loudness_lufs: -16, noise_reduction: true } });
    assert.deepEqual(
      { ...m.compositions[0], clips: undefined },
      {
        ...composition(),
        clips: undefined,
        name: 'Intro',
        revision: 3,
        markers: [
          { time: 0, label: 'start' },
          { time: 1, label: 'b starts' },
        ],
        audio: { loudness_lufs: -16, noise_reduction: true },
      },
    );
    const created = applyChange(m, {
      create: { composition_id: '0190ffff-0000-7000-8000-000000000000', name: 'Copy', clips: CLIPS, markers: [] },
    });
    assert.deepEqual(
      created.compositions.map((c) => [c.name, c.short_id, c.revision]),
      [
        ['Intro', '0190a', 3],
        ['Copy', '0190f', 0],
      ],
    );
    assert.deepEqual(
      applyChange(created, { composition_id: id, edit: { kind: 'delete' } }).compositions.map((c) => c.name),
      ['Copy'],
    );
  });

  it('reverts to a known snapshot, and refuses an unknown one', () => {
    const id = composition().composition_id;
    const before = { name: 'Old', clips: [clip('a', 0, 1)], markers: [], audio: { loudness_lufs: null, noise_reduction: false } };
    const lookup = (cid: string, revision: number) => (cid === id && revision === 1 ? before : undefined);
    const reverted = applyChange(model(), { composition_id: id, edit: { kind: 'revert', to_revision: 1 } }, lookup).compositions[0];
    assert.deepEqual(
      { name: reverted.name, clips: reverted.clips, revision: reverted.revision },
      { name: 'Old', clips: before.clips, revision: 3 },
    );
    assert.throws(
      () => applyChange(model(), { composition_id: id, edit: { kind: 'revert', to_revision: 2 } }, lookup),
      /to_revision 2: what the composition was then is not known here/,
    );
  });

  it('refuses an edit of a composition that is not in the project', () => {
    assert.throws(() => applyChange(model(), { composition_id: 'nope', edit: { kind: 'delete' } }), /not in the project/);
  });
});
