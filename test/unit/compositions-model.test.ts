import assert from 'node:assert/strict';
import { foldDocument } from '../../lib/app/projection';
import type { StoredEvent } from '../../lib/ports/event-store';
import type { Doc } from '../../lib/ports/read-store';
import { compositionDocEvolve, evolveCompositionDoc, foldCompositionDoc } from '../../lib/read-models/compositions';

/**
 * The `compositions` document folded many events at once (lib/read-models/compositions.ts, the
 * domain's fold) against evolving them one by one, each stamping `_rev` as lib/app/projection.ts
 * stamps it.
 */

const oneByOne = (doc: Doc | null, events: readonly StoredEvent[]): Doc | null => {
  for (const e of events) {
    const next = evolveCompositionDoc(doc, e);
    doc = next ? { ...next, _rev: e.revision } : doc;
  }
  return doc;
};

const AT = '2026-01-01T00:00:00.000Z';

/** A deterministic stream of every kind of edit, runs of cuts among them (the fold applies those in place). */
function stream(seed: number, length: number): StoredEvent[] {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const types: [string, () => object][] = [
    ['CompositionRangeCut', () => ({ from: 1 + next() * 50, to: 52 + next() * 5, at: AT })],
    [
      'CompositionRangesCut',
      () => ({
        ranges: [
          { from: next() * 40, to: 41 + next() },
          { from: 45, to: 46 },
        ],
        planned_on: 1,
        at: AT,
      }),
    ],
    ['CompositionRangeKept', () => ({ from: 0, to: 200 + next() * 50, at: AT })],
    ['CompositionRenamed', () => ({ name: `Name ${Math.floor(next() * 100)}`, at: AT })],
    ['CompositionMarkerAdded', () => ({ time: next() * 10, label: 'm', at: AT })],
    ['CompositionMarkersAdded', () => ({ markers: [{ time: next() * 10, label: 'n' }], planned_on: 1, at: AT })],
    ['CompositionClipsInserted', () => ({ time: 0, clips: [{ media: 'b.wav', in: 0, out: 5 + next() * 5 }], at: AT })],
    ['CompositionAudioSet', () => ({ loudness_lufs: -16, noise_reduction: next() < 0.5, planned_on: 1, at: AT })],
    [
      'CompositionReverted',
      () => ({
        to_revision: 1,
        name: 'Back',
        clips: [{ media: 'a.wav', in: 0, out: 300 }],
        markers: [],
        audio: null,
        deleted: null,
        at: AT,
      }),
    ],
    ['SomethingLater', () => ({})],
  ];
  const created = {
    ...{ project_id: 'p', composition_id: 'c', short_id: 'cccc1', name: 'Main', width: 1920, height: 1080, origin: 'j#0', created_at: AT },
    clips: [
      { media: 'a.wav', in: 0, out: 300 },
      { media: 'b.wav', in: 10, out: 200 },
    ],
    markers: [],
  };
  const events: { type: string; data: object }[] = [{ type: 'CompositionRenamed', data: { name: 'too early', at: AT } }];
  events.push({ type: 'CompositionCreated', data: created });
  while (events.length < length) {
    const [type, data] = next() < 0.5 ? types[Math.floor(next() * 3)] : types[Math.floor(next() * types.length)];
    events.push({ type, data: data() });
  }
  if (seed % 2 === 0) events.push({ type: 'CompositionDeleted', data: { planned_on: 1, at: AT } });
  return events.map((e, revision) => ({
    ...e,
    id: `e${revision}`,
    metadata: { partition_key: 'p' },
    streamId: 'composition-c',
    revision,
    position: String(revision),
    createdAt: AT,
  })) as StoredEvent[];
}

describe('the compositions document folded many events at once', () => {
  it('is the document evolving one by one makes, whatever the batches and whatever it starts from', () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const events = stream(seed, 120);
      const whole = oneByOne(null, events);
      assert.ok(whole && (whole.clips as unknown[]).length > 0);
      assert.deepEqual(foldCompositionDoc(null, events), whole, `seed ${seed}`);
      assert.deepEqual(foldDocument(events, compositionDocEvolve), whole);
      for (let cut = 0; cut <= events.length; cut += 5) {
        const first = foldCompositionDoc(null, events.slice(0, cut));
        assert.deepEqual(first, oneByOne(null, events.slice(0, cut)), `seed ${seed}, first ${cut}`);
        // As the projector does: the first part written and read back (JSON), then the rest.
        const stored = first && (JSON.parse(JSON.stringify(first)) as Doc);
        assert.deepEqual(foldCompositionDoc(stored, events.slice(cut)), oneByOne(stored, events.slice(cut)), `seed ${seed}, cut ${cut}`);
      }
    }
  });

  it('leaves the document it started from as it was, and returns it for no events', () => {
    const events = stream(7, 60);
    const start = foldCompositionDoc(null, events.slice(0, 30))!;
    const copy = JSON.parse(JSON.stringify(start)) as Doc;
    foldCompositionDoc(start, events.slice(30));
    assert.deepEqual(start, copy);
    assert.equal(foldCompositionDoc(start, []), start);
    assert.equal(foldCompositionDoc(null, events.slice(0, 1)), null);
  });
});
