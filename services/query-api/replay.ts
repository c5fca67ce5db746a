import { markBuilt, rebuildModels, type ReadModel } from '../../lib/app/read-models';
import type { BlobStore } from '../../lib/ports/blob-store';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import type { SearchIndex } from '../../lib/ports/search-index';
import { READ_MODELS } from './read-models';
import { indexPage } from './search-indexer';

/** The search index, named as the marker names what it has built: bump to re-index at start-up. */
export const SEARCH = { name: 'search', version: 1 } as const;

export type ReplayDeps = {
  store: EventStore;
  read: ReadStore;
  /** With these, the search index is rebuilt in the same pass. */
  search?: { index: SearchIndex; blobs: BlobStore };
  onProgress?: (events: number) => void;
  batchSize?: number;
};

/**
 * Rebuilds read models (every one unless told), and the search index when given, from position 0
 * of the event store. Safe beside a running projector: a document the projector writes after the
 * clear is folded from its stream (gap healing), and replayed events older than it are then
 * duplicates; search entries are written from the documents, so either writer leaves them right.
 */
export async function replayReadModels(deps: ReplayDeps, models: readonly ReadModel[] = READ_MODELS) {
  const search = deps.search;
  if (search) await search.index.clear();
  const result = await rebuildModels(
    {
      ...deps,
      afterPage: search ? (page) => indexPage({ read: deps.read, search: search.index, blobs: search.blobs }, page) : undefined,
    },
    models,
  );
  // The marker says the models are whole: the search index is another file, and neither need be
  // on the disk yet (ReadStore.flush), so both are made durable before it is written.
  await flushReadSide(deps);
  await markBuilt(deps.read, search ? [...READ_MODELS, SEARCH] : READ_MODELS);
  await deps.read.flush();
  return result;
}

/**
 * Makes what the read store and the search index acknowledged durable (`ReadStore.flush`): they
 * acknowledge writes before the disk has them, so anything that records "built up to here"
 * (the projector's checkpoint, replay's marker) flushes them first.
 */
export async function flushReadSide(deps: { read: ReadStore; search?: { index: SearchIndex } }): Promise<void> {
  await Promise.all([deps.read.flush(), deps.search?.index.flush()]);
}
