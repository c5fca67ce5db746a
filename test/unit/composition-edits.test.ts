import assert from 'node:assert/strict';
import {
  compositionDecider,
  type CompositionCommand,
  type CompositionEvent,
  type CompositionState,
  decideComposition,
  evolveComposition,
  foldComposition,
  initialCompositionState,
  snapshotAt,
} from '../../lib/domain/composition';
import { applyChange, applyEdit, modelCompositionOf } from '../../lib/domain/agent/apply-edit';
import type { CompositionEdit, ModelComposition, ProjectModel } from '../../lib/domain/agent/edits';
import { isRejection } from '../../lib/domain/errors';
import { specFor } from '../fixtures/given';

/** Issue 20: edits planned on a revision, decided as a turn (one event per edit), and the in-memory model agreeing with them. */
const given = specFor(compositionDecider);

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:01:00.000Z';
const A = { media: 'a.mp4', in: 0, out: 10 };
const B = { media: 'b.wav', in: 0, out: 5 };
const NO_AUDIO = { loudness_lufs: null, noise_reduction: false };
const created: CompositionEvent = {
  type: 'CompositionCreated',
  data: {
    project_id: 'p',
    composition_id: 'abcde000-0000-4000-8000-000000000000',
    short_id: 'abcde',
    name: 'Main',
    clips: [A, B],
    markers: [],
    width: 1920,
    height: 1080,
    origin: 'job-1#0',
    created_at: T0,
  },
};
const edits = (planned_on: number, ...list: CompositionEdit[]): CompositionCommand => ({
  type: 'ApplyEdits',
  edits: list,
  planned_on,
  now: T1,
});
const fold = (...events: CompositionEvent[]) => events.reduce(evolveComposition, initialCompositionState());
const existing = (state: CompositionState) => {
  assert.ok(state.exists);
  return state;
};
/** The stream after deciding each command on what the ones before appended. */
const run = (...commands: CompositionCommand[]): CompositionEvent[] =>
  commands.reduce<CompositionEvent[]>(
    (stream, command) => {
      const out = decideComposition(command, fold(...stream));
      assert.ok(!isRejection(out), isRejection(out) ? out.error.message : '');
      return [...stream, ...out];
    },
    [created],
  );

describe('composition edits planned on a revision', () => {
  describe('one edit event per edit', () => {
    it('cuts many ranges in one event, sorted and merged, each in composition time before the edit', () =>
      given(created)
        .when(
          edits(0, {
            kind: 'cut',
            ranges: [
              { from: 12, to: 13 },
              { from: 1, to: 2 },
              { from: 1.5, to: 3.0004 },
            ],
          }),
        )
        .then([
          {
            type: 'CompositionRangesCut',
            data: {
              ranges: [
                { from: 1, to: 3 },
                { from: 12, to: 13 },
              ],
              planned_on: 0,
              at: T1,
            },
          },
        ]));
    it('folds a many-range cut as the ranges cut from the last to the first', () => {
      const state = existing(
        fold(
          ...run(
            edits(0, {
              kind: 'cut',
              ranges: [
                { from: 1, to: 3 },
                { from: 12, to: 13 },
              ],
            }),
          ),
        ),
      );
      assert.deepEqual(state.clips, [
        { media: 'a.mp4', in: 0, out: 1 },
        { media: 'a.mp4', in: 3, out: 10 },
        { media: 'b.wav', in: 0, out: 2 },
        { media: 'b.wav', in: 3, out: 5 },
      ]);
      assert.equal(state.revision, 1);
    });
    it('decides a turn of several edits into their events, each seeing the ones before, all planned on one revision', () =>
      given(created)
        .when(
          edits(
            0,
            { kind: 'keep', from: 0, to: 12 },
            { kind: 'rename', name: 'Intro' },
            { kind: 'add_markers', markers: [{ time: 11, label: 'b' }] },
            { kind: 'set_audio', loudness_lufs: -16, noise_reduction: true },
          ),
        )
        .then([
          { type: 'CompositionRangeKept', data: { from: 0, to: 12, planned_on: 0, at: T1 } },
          { type: 'CompositionRenamed', data: { name: 'Intro', planned_on: 0, at: T1 } },
          { type: 'CompositionMarkersAdded', data: { markers: [{ time: 11, label: 'b' }], planned_on: 0, at: T1 } },
          { type: 'CompositionAudioSet', data: { loudness_lufs: -16, noise_reduction: true, planned_on: 0, at: T1 } },
        ]));
    it('records nothing for an edit that changes nothing (a retried rename, audio as it is, a marker already there)', () => {
      const stream = run(edits(0, { kind: 'rename', name: 'Intro' }, { kind: 'add_markers', markers: [{ time: 1, label: 'x' }] }));
      given(...stream)
        .when(
          edits(
            2,
            { kind: 'rename', name: 'Intro' },
            { kind: 'set_audio', loudness_lufs: null, noise_reduction: false },
            { kind: 'add_markers', markers: [{ time: 1, label: 'x' }] },
          ),
        )
        .then([]);
    });
    it('keeps the audio settings in the state', () => {
      const state = existing(fold(...run(edits(0, { kind: 'set_audio', loudness_lufs: -14, noise_reduction: false }))));
      assert.deepEqual(state.audio, { loudness_lufs: -14, noise_reduction: false });
    });
  });

  describe('refusals', () => {
    it('refuses edits planned on a revision older than the current one, so they never remove content they did not see', () => {
      const stream = run(edits(0, { kind: 'rename', name: 'Other' }));
      given(...stream)
        .when(edits(0, { kind: 'cut', ranges: [{ from: 0, to: 1 }] }))
        .thenRejects('conflict', { state: 'moved_on' });
    });
    it('refuses a revision the composition has not reached', () =>
      given(created)
        .when(edits(3, { kind: 'rename', name: 'x' }))
        .thenRejects('invalid_input'));
    it('refuses the whole turn when one edit is bad, naming it', () => {
      const out = decideComposition(
        edits(0, { kind: 'rename', name: 'ok' }, { kind: 'cut', ranges: [{ from: 2, to: 99 }] }),
        fold(created),
      );
      assert.ok(isRejection(out));
      assert.equal(out.error.message, 'ranges[0]: to 99 is past the end of the composition (15 s)');
    });
    it('refuses an empty cut, a bad loudness target and an empty name', () => {
      const refusal = (edit: CompositionEdit) => {
        const out = decideComposition(edits(0, edit), fold(created));
        assert.ok(isRejection(out), JSON.stringify(edit));
        assert.equal(out.error.code, 'invalid_input');
        return out.error.message;
      };
      assert.equal(refusal({ kind: 'cut', ranges: [] }), 'ranges must not be empty');
      assert.match(refusal({ kind: 'set_audio', loudness_lufs: 3, noise_reduction: false }), /^loudness_lufs must be null or a number/);
      assert.equal(refusal({ kind: 'rename', name: ' ' }), 'name must not be empty');
      assert.match(refusal({ kind: 'revert', to_revision: 1 }), /^to_revision must be a revision from 0 to 0/);
    });
  });

  describe('deleting', () => {
    const deleted = run(edits(0, { kind: 'delete' }));
    it('records the deletion', () => assert.deepEqual(deleted[1], { type: 'CompositionDeleted', data: { planned_on: 0, at: T1 } }));
    it('refuses further edits of a deleted composition as not found, old commands too', () => {
      given(...deleted)
        .when(edits(1, { kind: 'rename', name: 'x' }))
        .thenRejects('not_found');
      given(...deleted)
        .when({ type: 'CutRange', from: 0, to: 1, now: T1 })
        .thenRejects('not_found');
    });
    it('comes back with a revert to a revision before the deletion (undo)', () => {
      const stream = run(edits(0, { kind: 'delete' }), edits(1, { kind: 'revert', to_revision: 0 }));
      const state = existing(fold(...stream));
      assert.deepEqual([state.deleted, state.clips, state.revision], [false, [A, B], 2]);
    });
  });

  describe('reverting from the folded events (no snapshot per revision)', () => {
    const stream = run(
      edits(0, { kind: 'cut', ranges: [{ from: 1, to: 2 }] }),
      edits(1, { kind: 'set_audio', loudness_lufs: -16, noise_reduction: true }),
      edits(2, { kind: 'rename', name: 'Tight' }, { kind: 'add_markers', markers: [{ time: 3, label: 'm' }] }),
    );
    it('restores every revision exactly, audio settings included', () => {
      const state = existing(fold(...stream));
      for (let r = 0; r <= state.revision; r++) {
        const then = existing(fold(...stream.slice(0, r + 1)));
        const out = decideComposition(edits(state.revision, { kind: 'revert', to_revision: r }), state);
        assert.ok(!isRejection(out));
        const after = existing(fold(...stream, ...out));
        const pick = (s: typeof state) => [s.name, s.clips, s.markers, s.audio, s.deleted];
        assert.deepEqual(pick(after), pick(then), `revert to ${r}`);
      }
    });
    it('tells the snapshot of a revision from the log', () => {
      const state = existing(fold(...stream));
      assert.deepEqual(snapshotAt(state, 1)?.clips, [{ media: 'a.mp4', in: 0, out: 1 }, { media: 'a.mp4', in: 2, out: 10 }, B]);
      assert.deepEqual(snapshotAt(state, 2)?.audio, { loudness_lufs: -16, noise_reduction: true });
      assert.equal(snapshotAt(state, 9), null);
    });
  });

  describe('folding', () => {
    it('folds many cuts, edits between them, to the same state as folding event by event', () => {
      const events: CompositionEvent[] = [created];
      for (let i = 0; i < 300; i++) {
        const from = (i * 37) % 11;
        if (i % 50 === 7) events.push({ type: 'CompositionRenamed', data: { name: `n${i}`, at: T1 } });
        else if (i % 3 === 0) events.push({ type: 'CompositionRangeCut', data: { from, to: from + 0.013, at: T1 } });
        else
          events.push({
            type: 'CompositionRangesCut',
            data: {
              ranges: [
                { from: 0.5, to: 0.507 },
                { from, to: from + 0.011 },
              ],
              planned_on: i,
              at: T1,
            },
          });
      }
      const slow = existing(events.reduce(evolveComposition, initialCompositionState()));
      const fast = existing(foldComposition(initialCompositionState(), events));
      const pick = (s: typeof slow) => [s.name, s.clips, s.markers, s.revision, s.updated_at];
      assert.deepEqual(pick(fast), pick(slow));
      // From a state part way, as the command handler folds what it has not folded yet.
      const part = existing(foldComposition(foldComposition(initialCompositionState(), events.slice(0, 100)), events.slice(100)));
      assert.deepEqual(pick(part), pick(slow));
      assert.deepEqual(snapshotAt(fast, 150), snapshotAt(slow, 150));
    });
  });

  describe('applying an edit to the in-memory model', () => {
    const model: ModelComposition = {
      composition_id: created.data.composition_id,
      short_id: 'abcde',
      name: 'Main',
      revision: 0,
      clips: [A, B],
      markers: [],
      audio: NO_AUDIO,
    };
    const turn: CompositionEdit[] = [
      {
        kind: 'cut',
        ranges: [
          { from: 9, to: 11 },
          { from: 0, to: 0.5 },
        ],
      },
      { kind: 'add_markers', markers: [{ time: 2, label: 'x' }] },
      { kind: 'keep', from: 1, to: 11 },
      { kind: 'rename', name: 'Short' },
      { kind: 'set_audio', loudness_lufs: -16, noise_reduction: true },
    ];
    it('gives the composition the events give, keeping the revision the edits are planned on', () => {
      let m: ModelComposition = model;
      for (const edit of turn) {
        const next = applyEdit(m, edit);
        assert.ok(next && !isRejection(next));
        m = next;
      }
      const state = existing(fold(...run(edits(0, ...turn))));
      assert.deepEqual([m.name, m.clips, m.markers, m.audio, m.revision], [state.name, state.clips, state.markers, state.audio, 0]);
    });
    it('is read from the folded state: its revision, clips and audio; none once deleted', () => {
      const stream = run(edits(0, { kind: 'set_audio', loudness_lufs: -16, noise_reduction: false }));
      assert.deepEqual(modelCompositionOf(fold(...stream)), {
        ...model,
        revision: 1,
        audio: { loudness_lufs: -16, noise_reduction: false },
      });
      assert.equal(modelCompositionOf(fold(...run(edits(0, { kind: 'delete' })))), null);
      assert.equal(modelCompositionOf(initialCompositionState()), null);
    });
    it('is null once deleted, and refuses what the decider refuses', () => {
      assert.equal(applyEdit(model, { kind: 'delete' }), null);
      const out = applyEdit(model, { kind: 'keep', from: 3, to: 2 });
      assert.ok(isRejection(out));
      assert.equal(out.error.message, 'from must be less than to');
    });
    it('reverts with a snapshot it is given', () => {
      const reverted = applyEdit({ ...model, revision: 4 }, { kind: 'revert', to_revision: 1 }, (r) =>
        r === 1 ? { name: 'Then', clips: [B], markers: [], audio: NO_AUDIO, deleted: false } : null,
      );
      assert.ok(reverted && !isRejection(reverted));
      assert.deepEqual([reverted.name, reverted.clips], ['Then', [B]]);
      assert.ok(isRejection(applyEdit({ ...model, revision: 4 }, { kind: 'revert', to_revision: 1 })));
    });
  });

  describe('applying a planned change to the project model', () => {
    const main: ModelComposition = {
      composition_id: created.data.composition_id,
      short_id: 'abcde',
      name: 'Main',
      revision: 3,
      clips: [A, B],
      markers: [],
      audio: NO_AUDIO,
    };
    const project: ProjectModel = { project_id: 'p', media: [], compositions: [main] };
    const NEW = '0193a3c2-1234-7abc-8def-0123456789ab';
    it('replaces the edited composition, keeping the others and the revision', () => {
      const out = applyChange(project, { composition_id: main.composition_id, edit: { kind: 'rename', name: 'Intro' } });
      assert.ok(!isRejection(out));
      assert.deepEqual(out.compositions, [{ ...main, name: 'Intro' }]);
    });
    it('adds a new composition at revision 0 with its short id, and drops a deleted one', () => {
      const added = applyChange(project, { create: { composition_id: NEW, name: 'Clip', clips: [B], markers: [] } });
      assert.ok(!isRejection(added));
      assert.deepEqual(added.compositions[1], {
        composition_id: NEW,
        short_id: '0193a',
        name: 'Clip',
        revision: 0,
        clips: [B],
        markers: [],
        audio: NO_AUDIO,
      });
      const dropped = applyChange(added, { composition_id: main.composition_id, edit: { kind: 'delete' } });
      assert.ok(!isRejection(dropped));
      assert.deepEqual(
        dropped.compositions.map((c) => c.name),
        ['Clip'],
      );
    });
    it('refuses an edit of a composition the project does not have', () => {
      const out = applyChange(project, { composition_id: NEW, edit: { kind: 'delete' } });
      assert.ok(isRejection(out));
      assert.equal(out.error.code, 'not_found');
    });
  });
});
