import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import { prepareReadModels, projectMany, READ_MODELS } from './read-models';

/**
 * Rebuilds every read model from position 0 of the event store. Safe beside a running
 * projector: a document the projector writes after the clear is folded from its stream (gap
 * healing), and replayed events older than it are then duplicates.
 */
export async function replayReadModels(deps: {
  store: EventStore;
  read: ReadStore;
  onProgress?: (events: number) => void;
  batchSize?: number;
}) {
  const started = process.hrtime.bigint();
  for (const collection of READ_MODELS) await deps.read.clear(collection);
  await prepareReadModels(deps.read);
  let events = 0;
  let after: string | null = null;
  for (;;) {
    const page = await deps.store.readAll(after, deps.batchSize ?? 1000);
    if (page.length === 0) break;
    await projectMany(deps, page);
    events += page.length;
    after = page[page.length - 1].position;
    deps.onProgress?.(events);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { events, seconds, eventsPerSecond: seconds > 0 ? Math.round(events / seconds) : events };
}
