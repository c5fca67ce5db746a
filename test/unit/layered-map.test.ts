import assert from 'node:assert/strict';
import { LayeredMap } from '../../lib/domain/layered-map';

/** lib/domain/layered-map.ts: an immutable map whose versions share most of their entries. */

/** A deterministic sequence of numbers in [0, 1). */
function random(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

describe('LayeredMap', () => {
  it('reads as a Map given the same sets, in the same order, and every earlier version stays as it was', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const next = random(seed);
      let layered = LayeredMap.empty<string, number>();
      const model = new Map<string, number>();
      const versions: [LayeredMap<string, number>, [string, number][]][] = [];
      for (let step = 0; step < 400; step++) {
        const changes = new Map<string, number>();
        const count = 1 + Math.floor(next() * (step % 50 === 0 ? 300 : 4));
        for (let i = 0; i < count; i++) changes.set(`k${Math.floor(next() * 600)}`, step * 1000 + i);
        layered = layered.withAll(changes);
        for (const [k, v] of changes) model.set(k, v);
        assert.equal(layered.size, model.size);
        assert.deepEqual([...layered], [...model], `seed ${seed}, step ${step}`);
        if (step % 37 === 0) versions.push([layered, [...model]]);
      }
      for (const [version, entries] of versions) assert.deepEqual([...version.entries()], entries);
      assert.deepEqual([...layered.keys()], [...model.keys()]);
      assert.deepEqual([...layered.values()], [...model.values()]);
      for (const k of ['k0', 'k17', 'k599', 'absent']) {
        assert.equal(layered.get(k), model.get(k));
        assert.equal(layered.has(k), model.has(k));
      }
      const seen: [string, number][] = [];
      layered.forEach((v, k, map) => {
        assert.equal(map, layered);
        seen.push([k, v]);
      });
      assert.deepEqual(seen, [...model]);
    }
  });

  it('keeps a value of undefined apart from a missing key, and returns itself for no change', () => {
    const m = LayeredMap.from(new Map<string, number | undefined>([['a', 1]])).withAll(new Map([['a', undefined]]));
    assert.equal(m.has('a'), true);
    assert.equal(m.get('a'), undefined);
    assert.equal(m.withAll(new Map()), m);
    assert.equal(LayeredMap.from(m), m);
  });

  it('costs about the square root of its size per entry set, not its size (counted in Map writes)', () => {
    const n = 10_000;
    const big = LayeredMap.from(new Map<string, number>(Array.from({ length: n }, (_, i) => [`file-${i}`, i] as const)));
    const set = Map.prototype.set;
    let writes = 0;
    Map.prototype.set = function (this: Map<unknown, unknown>, key: unknown, value: unknown) {
      writes += 1;
      return set.call(this, key, value);
    };
    let version = big;
    try {
      for (let i = 0; i < 1000; i++) version = version.withAll(new Map([[`more-${i}`, i]]));
    } finally {
      Map.prototype.set = set;
    }
    assert.equal(version.size, n + 1000);
    assert.equal(big.size, n);
    // A copy of the whole map per version would be 10 million writes.
    assert.ok(writes < 1000 * 400, `${writes} Map writes for 1,000 versions of ${n.toLocaleString('en-US')} entries`);
  });
});
