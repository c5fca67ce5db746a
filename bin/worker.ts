import { openConsumerSide } from '../lib/adapters/consumer-side';
import type { Logger } from 'pino';
import { createWatermark, type Watermark } from '../lib/app/consistency';
import type { Config } from '../lib/config';
import type { LogSubscription } from '../lib/ports/event-log';
import { openLogProducer } from '../lib/adapters/from-config';
import { createReadStoreCheckpoints } from '../lib/adapters/read-store-checkpoints';
import { createMetrics, type Metrics } from '../lib/observability/metrics';
import { jobMetrics, projectorObservers, watchLag } from '../lib/observability/wiring';
import { exitOnFatal, runService } from '../lib/run-service';
import { serveParent } from '../lib/supervise';
import { openBlobStore } from '../lib/adapters/from-config';
import * as processors from '../services/processors';
import { processorsDeps } from '../services/processors/from-config';
import { startProjector } from '../services/query-api/projector';
import * as relay from '../services/relay';
import * as webhooks from '../services/webhook-dispatcher';
import { dispatcherDeps } from '../services/webhook-dispatcher/from-config';

/**
 * The all-in-one mode's workers (DESIGN §1): child processes that `serve` supervises, so nothing
 * a media host or a job does can stop the HTTP APIs. Each runs a part, named by its argument:
 * - `projector`: the read models and the search index. Apart from job work so that its lag does
 *   not wait behind it (issue 18: sharing one event loop with eight import slots, it did): a read
 *   after a write waits on this process alone.
 * - `jobs`: job work, webhook delivery and (with Kafka) the relay. Webhooks wait on the
 *   projector's watermark, which `serve` passes on from the other child.
 * - neither (`all`): both parts in one process.
 * A consumer that can no longer consume ends the process; the supervisor starts a new one. When
 * the parent is gone, the worker stops too.
 */
export type WorkerPart = 'projector' | 'jobs' | 'all';

/** How long an orphaned worker whose writer was its parent's may take to stop. */
const ORPHANED_GRACE_MS = 2000;

const part = (process.argv[2] ?? 'all') as WorkerPart;
if (!['projector', 'jobs', 'all'].includes(part)) throw new Error(`bin/worker: unknown part "${part}" (projector, jobs or all)`);

runService(part === 'all' ? 'worker' : `worker ${part}`, async (config, logger) => {
  const metrics = createMetrics();
  const consumers = await openConsumerSide(config, logger, metrics);
  const { store } = consumers;
  // Read-your-writes: the APIs in the parent wait on the projector's watermark, and so do webhooks.
  const watermark = createWatermark();
  const parent = serveParent({
    answer: async (question) => (question === 'metrics' ? metrics.registry.getMetricsAsJSON() : null),
    onOrphaned: () => {
      // The embedded store's writer lived in the parent: nothing this process does can be committed
      // any more, and each append would retry its connection for seconds before failing. It stops
      // as on SIGTERM, and exits after a short grace whatever still waits; a job it ran is taken
      // up again once its claim lapses, as after a crash.
      if (config.eventsWriterSocket) {
        logger.warn({ grace_ms: ORPHANED_GRACE_MS }, 'the parent process is gone, and the event store writer with it: stopping');
        setTimeout(() => process.exit(1), ORPHANED_GRACE_MS).unref();
      }
      process.kill(process.pid, 'SIGTERM');
    },
    // The APIs appended: the consumers read it now rather than at their next poll of the store.
    onAppended: () => ('appendedElsewhere' in store ? store.appendedElsewhere() : undefined),
    onProjected: (position) => watermark.advance(position),
  });
  const onFatal = exitOnFatal(logger, (err) => parent.fatal(err.message));

  const stops: (() => Promise<void>)[] = [];
  const subscriptions: LogSubscription[] = [];
  const projector =
    part === 'jobs'
      ? null
      : await startProjectorPart(config, logger, metrics, consumers, onFatal, (position) => {
          watermark.advance(position);
          parent.projected(position);
        });
  if (projector) {
    stops.unshift(() => projector.close());
    subscriptions.push(projector);
  }
  // The jobs part alone gets the projector's watermark from the parent; with the projector here,
  // there is one only when its log reports one.
  const watermarked = projector === null || projector.onWatermark !== undefined;
  if (part !== 'projector') {
    // What job work appends wakes the projector in the other child: serve's writer thread, which
    // commits it (EVENTS_WRITER_SOCKET), tells serve, which tells the projector.
    const options = { onFatal, projected: watermarked ? watermark : undefined };
    stops.unshift(...(await startJobs(config, logger, metrics, consumers, options, subscriptions)));
  }
  const lag = watchLag(metrics, subscriptions);
  parent.ready();

  return async () => {
    lag.stop();
    for (const stop of stops) await stop().catch((err) => logger.error({ err }, 'error while stopping'));
    await consumers.close();
  };
});

/** The read models and the search index; `onMoved` hears each new watermark. */
async function startProjectorPart(
  config: Config,
  logger: Logger,
  metrics: Metrics,
  { log, readSide, store }: Awaited<ReturnType<typeof openConsumerSide>>,
  onFatal: (err: Error) => void,
  onMoved: (position: bigint) => void,
): Promise<LogSubscription> {
  const projector = await startProjector({
    log,
    read: readSide.read,
    store,
    logger,
    onFatal,
    search: { index: readSide.search, blobs: openBlobStore(config) },
    ...projectorObservers(metrics),
  });
  projector.onWatermark?.(onMoved);
  return projector;
}

/** Job work, webhook delivery and (with Kafka) the relay; resolves their stops, in the order to call them. */
async function startJobs(
  config: Config,
  logger: Logger,
  metrics: Metrics,
  consumers: Awaited<ReturnType<typeof openConsumerSide>>,
  options: { onFatal: (err: Error) => void; projected?: Watermark },
  subscriptions: LogSubscription[],
): Promise<(() => Promise<void>)[]> {
  const { store, readSide, deadLetters, log } = consumers;
  const stops: (() => Promise<void>)[] = [];
  if (config.kafka) {
    const producer = await openLogProducer(config, logger);
    const r = await relay.start({ store, producer, checkpoints: createReadStoreCheckpoints(readSide.read), logger, deadLetters });
    const relayLag = setInterval(() => metrics.relayLag.set(r.status().lag), 5000);
    relayLag.unref();
    stops.push(
      async () => clearInterval(relayLag),
      r.stop,
      () => producer.close(),
    );
  }
  const { onFatal } = options;
  const proc = await processors.start(
    processorsDeps(config, logger, { store, read: readSide.read, log }, { observer: jobMetrics(metrics), onFatal }),
  );
  stops.unshift(proc.stop);
  const dispatcher = await webhooks.start(
    dispatcherDeps(config, logger, { store, read: readSide.read, log }, { onFatal, projected: options.projected }),
  );
  stops.unshift(dispatcher.stop);
  metrics.watchWebhooks(dispatcher.slots);
  subscriptions.push(...proc.subscriptions, ...(dispatcher.subscription ? [dispatcher.subscription] : []));
  return stops;
}
