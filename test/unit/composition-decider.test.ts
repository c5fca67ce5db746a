import assert from 'node:assert/strict';
import type { Decider } from '../../lib/domain/decider';
import {
  type CompositionCommand,
  compositionDecider,
  type CompositionEvent,
  type CompositionState,
  decideComposition,
  evolveComposition,
  initialCompositionState,
} from '../../lib/domain/composition';
import { isRejection } from '../../lib/domain/errors';
import { specFor } from '../fixtures/given';

const typed: Decider<CompositionCommand, CompositionEvent, CompositionState> = compositionDecider;
const given = specFor(typed);

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:01:00.000Z';
const T2 = '2026-01-01T00:02:00.000Z';
const ID = 'abcde000-0000-4000-8000-000000000000';
const A = { media: 'a.mp4', in: 0, out: 10 };
const B = { media: 'b.wav', in: 0, out: 5 };
const composition = {
  project_id: 'p',
  composition_id: ID,
  short_id: 'abcde',
  name: 'Main',
  clips: [A, B],
  width: 1920,
  height: 1080,
  origin: 'job-1#0',
};
const created: CompositionEvent = { type: 'CompositionCreated', data: { ...composition, markers: [], created_at: T0 } };
const create = (over: Partial<typeof composition> & { markers?: { time: number; label: string }[] } = {}): CompositionCommand => ({
  type: 'CreateComposition',
  composition: { ...composition, ...over },
  now: T0,
});
const durations = new Map<string, number | null>([
  ['a.mp4', 10],
  ['x.wav', 3.5],
  ['still.png', null],
  ['constructor', 2],
]);

const fold = (...events: CompositionEvent[]) => events.reduce(evolveComposition, initialCompositionState());
/** Decides on the folded events and returns the events, failing on a rejection. */
const decide = (events: CompositionEvent[], command: CompositionCommand): CompositionEvent[] => {
  const out = decideComposition(command, fold(...events));
  assert.ok(!isRejection(out), isRejection(out) ? out.error.message : '');
  return out;
};
const rejectionOf = (events: CompositionEvent[], command: CompositionCommand): string => {
  const out = decideComposition(command, fold(...events));
  assert.ok(isRejection(out), `expected a rejection, got ${JSON.stringify(out)}`);
  assert.equal(out.error.code, 'invalid_input');
  return out.error.message;
};
const NO_AUDIO = { loudness_lufs: null, noise_reduction: false };
const snapshot = (state: CompositionState) => {
  assert.ok(state.exists);
  return { name: state.name, clips: state.clips, markers: state.markers, audio: state.audio, deleted: state.deleted };
};

describe('composition decider', () => {
  describe('creating', () => {
    it('creates a composition with no markers', () => given().when(create()).then([created]));
    it('rounds clip times to milliseconds and sorts markers', () =>
      given()
        .when(
          create({
            clips: [{ media: 'a.mp4', in: 0.00049, out: 2.0004 }],
            markers: [
              { time: 2, label: 'b' },
              { time: 1.0001, label: 'a' },
            ],
          }),
        )
        .then([
          {
            type: 'CompositionCreated',
            data: {
              ...composition,
              clips: [{ media: 'a.mp4', in: 0, out: 2 }],
              markers: [
                { time: 1, label: 'a' },
                { time: 2, label: 'b' },
              ],
              created_at: T0,
            },
          },
        ]));
    it('is idempotent for the same origin', () =>
      given(created)
        .when(create({ name: 'Retried' }))
        .then([]));
    it('refuses a second creation from another origin', () =>
      given(created)
        .when(create({ origin: 'job-2#0' }))
        .thenRejects('conflict', { state: 'exists' }));
    it('refuses a bad size, clip or marker', () => {
      assert.equal(rejectionOf([], create({ width: 0 })), 'width must be a positive integer');
      assert.equal(rejectionOf([], create({ clips: [A, { media: 'b', in: 3, out: 3 }] })), 'clips[1].in must be less than clips[1].out');
      assert.match(rejectionOf([], create({ markers: [{ time: 16, label: 'x' }] })), /^markers\[0\]\.time 16 is past the end/);
    });
    it('starts at revision 0', () => {
      const state = fold(created);
      assert.ok(state.exists);
      assert.deepEqual([state.revision, state.updated_at, state.audio, state.deleted], [0, T0, NO_AUDIO, false]);
    });
  });

  it('refuses every edit of a composition that does not exist', () => {
    const edits: CompositionCommand[] = [
      { type: 'CutRange', from: 0, to: 1, now: T1 },
      { type: 'KeepRange', from: 0, to: 1, now: T1 },
      { type: 'InsertClips', time: 0, clips: [A], mediaDurations: durations, now: T1 },
      { type: 'RemoveClips', indexes: [0], now: T1 },
      { type: 'ReorderClips', order: [0], now: T1 },
      { type: 'Rename', name: 'x', now: T1 },
      { type: 'AddMarker', time: 0, label: 'x', now: T1 },
      { type: 'Revert', to_revision: 0, now: T1 },
    ];
    for (const command of edits) given().when(command).thenRejects('not_found');
  });

  describe('cutting and keeping ranges', () => {
    it('cuts a range, rounded to milliseconds', () =>
      given(created)
        .when({ type: 'CutRange', from: 3.0004, to: 12, now: T1 })
        .then([{ type: 'CompositionRangeCut', data: { from: 3, to: 12, at: T1 } }]));
    it('splits the clips at the edges of the cut', () => {
      const state = fold(created, { type: 'CompositionRangeCut', data: { from: 3, to: 12, at: T1 } });
      assert.deepEqual(snapshot(state).clips, [
        { media: 'a.mp4', in: 0, out: 3 },
        { media: 'b.wav', in: 2, out: 5 },
      ]);
    });
    it('refuses an empty, reversed or out-of-range range, naming the field', () => {
      assert.equal(rejectionOf([created], { type: 'CutRange', from: 4, to: 4, now: T1 }), 'from must be less than to');
      assert.equal(rejectionOf([created], { type: 'KeepRange', from: 5, to: 4, now: T1 }), 'from must be less than to');
      assert.equal(rejectionOf([created], { type: 'CutRange', from: -1, to: 4, now: T1 }), 'from must not be negative');
      assert.equal(
        rejectionOf([created], { type: 'CutRange', from: 1, to: 16, now: T1 }),
        'to 16 is past the end of the composition (15 s)',
      );
      assert.equal(rejectionOf([created], { type: 'CutRange', from: NaN, to: 1, now: T1 }), 'from must be a number');
    });
    it('keeps a range', () =>
      given(created)
        .when({ type: 'KeepRange', from: 9, to: 11, now: T1 })
        .then([{ type: 'CompositionRangeKept', data: { from: 9, to: 11, at: T1 } }]));
    it('keeping everything changes nothing, so records nothing', () =>
      given(created).when({ type: 'KeepRange', from: 0, to: 15, now: T1 }).then([]));
  });

  describe('clips', () => {
    const X = { media: 'x.wav', in: 0.5, out: 3.5 };
    it('inserts clips at a time', () =>
      given(created)
        .when({ type: 'InsertClips', time: 4, clips: [X], mediaDurations: durations, now: T1 })
        .then([{ type: 'CompositionClipsInserted', data: { time: 4, clips: [X], at: T1 } }]));
    it('splits the clip playing at the insertion time and moves later markers', () => {
      const marked: CompositionEvent = { type: 'CompositionMarkerAdded', data: { time: 6, label: 'later', at: T1 } };
      const state = fold(created, marked, { type: 'CompositionClipsInserted', data: { time: 4, clips: [X], at: T2 } });
      assert.deepEqual(snapshot(state), {
        name: 'Main',
        clips: [{ media: 'a.mp4', in: 0, out: 4 }, X, { media: 'a.mp4', in: 4, out: 10 }, B],
        markers: [{ time: 9, label: 'later' }],
        audio: NO_AUDIO,
        deleted: false,
      });
    });
    it('looks media up by reference in a Map, so "constructor" is a media name like any other', () =>
      given(created)
        .when({ type: 'InsertClips', time: 15, clips: [{ media: 'constructor', in: 0, out: 2 }], mediaDurations: durations, now: T1 })
        .then([{ type: 'CompositionClipsInserted', data: { time: 15, clips: [{ media: 'constructor', in: 0, out: 2 }], at: T1 } }]));
    it('refuses clips of unknown media, of an image, past the end of their media, or empty', () => {
      const insert = (clips: { media: string; in: number; out: number }[], time = 0): CompositionCommand => ({
        type: 'InsertClips',
        time,
        clips,
        mediaDurations: durations,
        now: T1,
      });
      assert.equal(
        rejectionOf([created], insert([X, { media: 'toString', in: 0, out: 1 }])),
        'clips[1].media "toString" is not a media file of the project',
      );
      assert.equal(
        rejectionOf([created], insert([{ media: 'still.png', in: 0, out: 1 }])),
        'clips[0].media "still.png" has no duration (an image) and cannot be a clip',
      );
      assert.equal(
        rejectionOf([created], insert([{ media: 'x.wav', in: 0, out: 3.6 }])),
        'clips[0].out 3.6 is past the end of "x.wav" (3.5 s)',
      );
      assert.equal(rejectionOf([created], insert([{ media: 'x.wav', in: 2, out: 1 }])), 'clips[0].in must be less than clips[0].out');
      assert.equal(rejectionOf([created], insert([])), 'clips must not be empty');
      assert.equal(rejectionOf([created], insert([X], 15.5)), 'time 15.5 is past the end of the composition (15 s)');
    });
    it('removes clips, recording the indexes in ascending order', () =>
      given(created)
        .when({ type: 'RemoveClips', indexes: [1, 0], now: T1 })
        .then([{ type: 'CompositionClipsRemoved', data: { indexes: [0, 1], at: T1 } }]));
    it('refuses indexes that are missing, out of range or repeated', () => {
      assert.equal(rejectionOf([created], { type: 'RemoveClips', indexes: [], now: T1 }), 'indexes must not be empty');
      assert.equal(
        rejectionOf([created], { type: 'RemoveClips', indexes: [2], now: T1 }),
        'indexes: 2 is not a clip index (the composition has 2 clips)',
      );
      assert.equal(rejectionOf([created], { type: 'RemoveClips', indexes: [1, 1], now: T1 }), 'indexes must not repeat an index');
    });
    it('reorders clips', () =>
      given(created)
        .when({ type: 'ReorderClips', order: [1, 0], now: T1 })
        .then([{ type: 'CompositionClipsReordered', data: { order: [1, 0], at: T1 } }]));
    it('records nothing for the order the clips already have', () =>
      given(created)
        .when({ type: 'ReorderClips', order: [0, 1], now: T1 })
        .then([]));
    it('refuses an order that is not a permutation of the clip indexes', () => {
      for (const order of [[0], [0, 0], [0, 2], [1, 0, 2]]) {
        assert.equal(
          rejectionOf([created], { type: 'ReorderClips', order, now: T1 }),
          'order must list each clip index from 0 to 1 exactly once',
        );
      }
    });
  });

  describe('names and markers', () => {
    it('renames', () =>
      given(created)
        .when({ type: 'Rename', name: 'Final cut', now: T1 })
        .then([{ type: 'CompositionRenamed', data: { name: 'Final cut', at: T1 } }]));
    it('records nothing for the same name, and refuses a blank one', () => {
      given(created).when({ type: 'Rename', name: 'Main', now: T1 }).then([]);
      assert.equal(rejectionOf([created], { type: 'Rename', name: '  ', now: T1 }), 'name must not be empty');
    });
    it('adds a marker', () =>
      given(created)
        .when({ type: 'AddMarker', time: 12.3456, label: 'laugh', now: T1 })
        .then([{ type: 'CompositionMarkerAdded', data: { time: 12.346, label: 'laugh', at: T1 } }]));
    it('adds the same marker once', () =>
      given(created, { type: 'CompositionMarkerAdded', data: { time: 2, label: 'x', at: T1 } })
        .when({ type: 'AddMarker', time: 2, label: 'x', now: T2 })
        .then([]));
    it('refuses a marker past the end or without a label', () => {
      assert.equal(
        rejectionOf([created], { type: 'AddMarker', time: 20, label: 'x', now: T1 }),
        'time 20 is past the end of the composition (15 s)',
      );
      assert.equal(rejectionOf([created], { type: 'AddMarker', time: 1, label: '', now: T1 }), 'label must not be empty');
    });
  });

  describe('reverting', () => {
    /** Applies each command in turn, as the command handler would, returning the whole stream. */
    const run = (...commands: CompositionCommand[]): CompositionEvent[] =>
      commands.reduce<CompositionEvent[]>((stream, command) => [...stream, ...decide(stream, command)], [created]);
    const edits: CompositionCommand[] = [
      { type: 'AddMarker', time: 11, label: 'b-start', now: T1 },
      { type: 'CutRange', from: 2, to: 3.5, now: T1 },
      { type: 'Rename', name: 'Tight', now: T1 },
      { type: 'ReorderClips', order: [2, 0, 1], now: T1 },
      { type: 'AddMarker', time: 1, label: 'intro', now: T1 },
    ];

    it('makes the composition exactly what it was after an earlier revision', () => {
      const stream = run(...edits);
      assert.equal(stream.length, 6);
      for (let r = 0; r < stream.length; r++) {
        const reverted = fold(...stream, ...decide(stream, { type: 'Revert', to_revision: r, now: T2 }));
        assert.deepEqual(snapshot(reverted), snapshot(fold(...stream.slice(0, r + 1))), `revert to revision ${r}`);
      }
    });
    it('counts the revert as a revision of its own, so a revert can be reverted', () => {
      const stream = run(...edits, { type: 'Revert', to_revision: 1, now: T2 });
      const afterEdits = snapshot(fold(...stream.slice(0, 6)));
      assert.deepEqual(snapshot(fold(...stream)), snapshot(fold(...stream.slice(0, 2))));
      assert.notDeepEqual(snapshot(fold(...stream)), afterEdits);
      const state = fold(...stream);
      assert.ok(state.exists);
      assert.deepEqual([state.revision, state.updated_at], [6, T2]);
      const again = run(...edits, { type: 'Revert', to_revision: 1, now: T2 }, { type: 'Revert', to_revision: 5, now: T2 });
      assert.deepEqual(snapshot(fold(...again)), afterEdits);
    });
    it('records the revert with the snapshot it restores', () => {
      const restored = snapshot(fold(...run(...edits).slice(0, 3)));
      given(...run(...edits))
        .when({ type: 'Revert', to_revision: 2, now: T2 })
        .then([{ type: 'CompositionReverted', data: { to_revision: 2, ...restored, at: T2 } }]);
    });
    it('records nothing when the composition already is what it was then', () =>
      given(...run(...edits))
        .when({ type: 'Revert', to_revision: 5, now: T2 })
        .then([]));
    it('refuses a revision that does not exist', () => {
      const stream = run(...edits.slice(0, 3));
      assert.equal(
        rejectionOf(stream, { type: 'Revert', to_revision: 7, now: T2 }),
        'to_revision 7 does not exist (the composition is at revision 3)',
      );
      assert.equal(rejectionOf(stream, { type: 'Revert', to_revision: -1, now: T2 }), 'to_revision must be a non-negative integer');
    });
  });

  it('skips an event type it does not know, still counting its revision so revert targets stay aligned', () => {
    const unknown = { type: 'CompositionColourGraded', data: { at: T2 } } as unknown as CompositionEvent;
    const renamed: CompositionEvent = { type: 'CompositionRenamed', data: { name: 'Later', at: T2 } };
    const state = fold(created, unknown, renamed);
    assert.ok(state.exists);
    assert.equal(state.revision, 2);
    assert.equal(state.name, 'Later');
    assert.deepEqual(decideComposition({ type: 'Revert', to_revision: 1, now: T2 }, state), [
      { type: 'CompositionReverted', data: { to_revision: 1, ...snapshot(fold(created)), at: T2 } },
    ]);
  });

  it('reads a creation written before markers existed as having none', () => {
    const { markers: _m, ...old } = created.data as Extract<CompositionEvent, { type: 'CompositionCreated' }>['data'];
    assert.deepEqual(snapshot(fold({ type: 'CompositionCreated', data: old } as CompositionEvent)).markers, []);
  });
});
