import { rebuildModels, markBuilt, type ReadModel } from '../../lib/app/read-models';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { READ_MODELS } from './read-models';

/**
 * Rebuilds read models from position 0 of the event store (every one unless told). Safe beside
 * a running projector: a document the projector writes after the clear is folded from its
 * stream (gap healing), and replayed events older than it are then duplicates.
 */
export async function replayReadModels(
  deps: { store: EventStore; read: ReadStore; onProgress?: (events: number) => void; batchSize?: number },
  models: readonly ReadModel[] = READ_MODELS,
) {
  const result = await rebuildModels(deps, models);
  await markBuilt(deps.read, READ_MODELS);
  return result;
}
