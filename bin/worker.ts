import { openConsumerSide } from '../lib/adapters/consumer-side';
import { createWatermark } from '../lib/app/consistency';
import { openLogProducer } from '../lib/adapters/from-config';
import { createReadStoreCheckpoints } from '../lib/adapters/read-store-checkpoints';
import { createMetrics } from '../lib/observability/metrics';
import { jobMetrics, watchLag } from '../lib/observability/wiring';
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
 * The all-in-one mode's worker (DESIGN §1): job work, projections, webhook delivery and (with Kafka) the relay, in
 * a child process that `serve` supervises, so nothing a media host or a job does can stop the
 * HTTP APIs. A consumer that can no longer consume ends the process; the supervisor starts a new
 * one. When the parent is gone, the worker stops too.
 */
runService('worker', async (config, logger) => {
  const metrics = createMetrics();
  const consumers = await openConsumerSide(config, logger, metrics);
  const { store, readSide, deadLetters, log } = consumers;
  const parent = serveParent({
    answer: async (question) => (question === 'metrics' ? metrics.registry.getMetricsAsJSON() : null),
    onOrphaned: () => process.kill(process.pid, 'SIGTERM'),
    // The APIs appended: the consumers read it now rather than at their next poll of the store.
    onAppended: () => ('appendedElsewhere' in store ? store.appendedElsewhere() : undefined),
  });
  const onFatal = exitOnFatal(logger, (err) => parent.fatal(err.message));

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
  const projector = await startProjector({
    log,
    read: readSide.read,
    store,
    logger,
    onFatal,
    search: { index: readSide.search, blobs: openBlobStore(config) },
    observeLag: (model, seconds) => metrics.projectionLag.observe({ read_model: model }, seconds),
  });
  stops.unshift(() => projector.close());
  // Read-your-writes: the APIs in the parent wait on the projector's watermark, and so do webhooks here.
  const watermark = createWatermark();
  projector.onWatermark?.((position) => {
    watermark.advance(position);
    parent.projected(position);
  });
  const proc = await processors.start(
    processorsDeps(config, logger, { store, read: readSide.read, log }, { observer: jobMetrics(metrics), onFatal }),
  );
  stops.unshift(proc.stop);
  const dispatcher = await webhooks.start(
    dispatcherDeps(config, logger, { store, read: readSide.read, log }, { onFatal, projected: projector.onWatermark && watermark }),
  );
  stops.unshift(dispatcher.stop);
  metrics.watchWebhooks(dispatcher.slots);
  const lag = watchLag(metrics, [projector, ...proc.subscriptions, ...(dispatcher.subscription ? [dispatcher.subscription] : [])]);
  parent.ready();

  return async () => {
    lag.stop();
    for (const stop of stops) await stop().catch((err) => logger.error({ err }, 'error while stopping'));
    await consumers.close();
  };
});
