import type { EventLog } from '../../lib/ports/event-log';
import type { ReadStore } from '../../lib/ports/read-store';
import { listen } from '../../lib/http/listen';
import { createApp, type QueryApiDeps } from './app';
import { startProjector, type ProjectorDeps } from './projector';

export { createApp };
export type { QueryApiDeps };

/**
 * Starts the query API on `port` and, beside it, the projector that keeps its read models
 * current (replicas share the work through the `projections` consumer group).
 */
export async function start(
  deps: QueryApiDeps & {
    port: number;
    log: EventLog;
    onFatal?: (err: Error) => void;
    /** The read models the projector writes. */ models: ReadStore;
  } & Pick<ProjectorDeps, 'observeLag' | 'observeBatch'>,
) {
  const projector = await startProjector({ ...deps, read: deps.models, search: { index: deps.search, blobs: deps.blobs } });
  const ready = async () => {
    await deps.ready?.();
    if (!projector.status().running) throw new Error('the projector stopped consuming');
  };
  const app = createApp({ ...deps, ready });
  const http = await listen(app, deps.port);
  deps.logger.info({ port: deps.port }, 'query-api listening');
  return {
    projector,
    async stop() {
      // Open event streams would hold the server's close until their jobs end.
      app.jobEvents.close();
      await http.close();
      await projector.close();
    },
  };
}
