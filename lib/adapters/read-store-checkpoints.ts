import type { CheckpointStore } from '../ports/event-log';
import type { ReadStore } from '../ports/read-store';

/**
 * Relay checkpoints kept as documents of a ReadStore (`{_id: name, _rev, position}`), so the
 * distributed deployment needs no extra engine. Saves are compare-and-set on `_rev`: a save that
 * loses a race re-reads and tries again, and the last save wins.
 */

const MAX_ATTEMPTS = 10;

export function createReadStoreCheckpoints(readStore: ReadStore, collection = 'checkpoints'): CheckpointStore {
  return {
    async load(name) {
      const doc = await readStore.get(collection, name);
      return typeof doc?.position === 'string' ? doc.position : null;
    },

    async save(name, position) {
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        const current = await readStore.get(collection, name);
        const expectedRev = current ? current._rev : null;
        const nextRev = expectedRev === null ? 0 : expectedRev + 1;
        const outcome = await readStore.put(collection, { _id: name, _rev: nextRev, position }, expectedRev);
        if (outcome === 'written') return;
      }
      // Only a second writer under the same name keeps winning the race: a deployment error.
      throw new Error(`checkpoint ${name}: gave up after ${MAX_ATTEMPTS} conflicting saves`);
    },
  };
}
