import assert from 'node:assert/strict';
import { v5 } from 'uuid';
import { candidatesUntilFree, compositionCandidates, compositionOrigin, firstFreeShortId, shortIdOf } from '../../lib/domain/ids';

/**
 * Composition ids are name-based (UUID v5) and stored in events: the ids a job proposes must stay
 * those it proposed before, and the short id the command API shows in `project_url` (worked out
 * without making the UUID) must be the one `AddComposition` takes.
 */
describe('composition ids', () => {
  // The namespace as it was given to uuid's v5 as text, before it was kept as bytes.
  const NAMESPACE = '5b0f2f55-6c1e-4f0e-9a43-0e4b1c2d7a10';
  const origins = [
    compositionOrigin('project-media-import-0193a3c2-1234-7abc-8def-0123456789ab', 'placeholder'),
    compositionOrigin('project-media-import-0193a3c2-1234-7abc-8def-0123456789ab', 0),
    compositionOrigin('6f1c1a8e-2b7d-4c55-9d0e-7f6a5b4c3d2e', 3),
    'a composition of "Ünïcödé" names #✓',
  ];

  it('proposes the same UUIDs as uuid v5 of "<origin>#<n>" in the composition namespace', () => {
    for (const origin of origins) {
      const expected = Array.from({ length: 16 }, (_, n) => v5(`${origin}#${n}`, NAMESPACE));
      assert.deepEqual(compositionCandidates(origin), expected, origin);
    }
  });

  it('tells the short id of the first candidate not taken, as the candidates themselves say', () => {
    for (const origin of origins) {
      const shortIds = compositionCandidates(origin).map(shortIdOf);
      for (let takenCount = 0; takenCount <= 16; takenCount++) {
        const taken = new Set(shortIds.slice(0, takenCount));
        const expected = shortIds.find((s) => !taken.has(s));
        assert.equal(firstFreeShortId(origin, taken), expected, `${origin} with ${takenCount} taken`);
      }
    }
  });

  it('proposes to AddComposition a prefix of the candidates that holds the one it would pick from all sixteen', () => {
    for (const origin of origins) {
      const all = compositionCandidates(origin);
      const shortIds = all.map(shortIdOf);
      for (let takenCount = 0; takenCount <= 16; takenCount++) {
        const taken = new Set(shortIds.slice(0, takenCount));
        const proposed = candidatesUntilFree(origin, taken);
        assert.deepEqual(proposed, all.slice(0, Math.min(16, takenCount + 3)), `${origin} with ${takenCount} taken`);
        const pick = (list: string[], t: ReadonlySet<string>) => list.find((c) => !t.has(shortIdOf(c)));
        assert.equal(pick(proposed, taken), pick(all, taken));
        // Two more listed meanwhile: still the same pick; a third takes the last one proposed.
        const later = new Set([...taken, ...shortIds.slice(takenCount, takenCount + 2)]);
        assert.equal(pick(proposed, later), pick(all, later));
      }
    }
  });

  it('tells the right short id for many origins', () => {
    for (let i = 0; i < 500; i++) {
      const origin = compositionOrigin(`project-media-import-${i}`, i % 3 === 0 ? 'placeholder' : i);
      assert.equal(firstFreeShortId(origin, new Set()), shortIdOf(compositionCandidates(origin)[0]), origin);
    }
  });
});
