import { openDeadLetters, openEventLog, openEventStore, openReadStore } from '../../lib/adapters/from-config';
import { listen } from '../../lib/http/listen';
import { createMetrics } from '../../lib/observability/metrics';
import { countingDeadLetters, jobMetrics, watchLag } from '../../lib/observability/wiring';
import { runService } from '../../lib/run-service';
import Koa from 'koa';
import { processorsDeps } from './from-config';
import { start } from './index';

/**
 * Composition root of the processors (scale out: instances share each job type's consumer
 * group). It serves `/healthz`, `/readyz` and `/metrics` on PORT for the orchestrator.
 */
runService('processors', async (config, logger) => {
  const metrics = createMetrics();
  const store = openEventStore(config);
  const readSide = await openReadStore(config);
  const deadLetters = countingDeadLetters(openDeadLetters(config, readSide, logger), metrics);
  const log = await openEventLog(config, store, logger, deadLetters);
  const onFatal = (err: Error) => {
    logger.fatal({ err }, 'a consumer can no longer consume; exiting so that it is restarted');
    setTimeout(() => process.exit(1), 100).unref();
  };
  const service = await start(
    processorsDeps(config, logger, { store, read: readSide.read, log }, { observer: jobMetrics(metrics), onFatal }),
  );
  const lag = watchLag(metrics, service.subscriptions);
  const ops = new Koa();
  ops.use(async (ctx) => {
    if (ctx.path === '/healthz') ctx.body = { status: 'ok' };
    else if (ctx.path === '/readyz') {
      const down = service.subscriptions.find((s) => !s.status().running);
      ctx.status = down ? 503 : 200;
      ctx.body = down ? { error: 'unavailable', message: `consumer group ${down.status().group} stopped` } : { status: 'ready' };
    } else if (ctx.path === '/metrics') {
      ctx.type = metrics.registry.contentType;
      ctx.body = await metrics.registry.metrics();
    } else ctx.status = 404;
  });
  const http = await listen(ops, config.port);
  return async () => {
    await http.close();
    lag.stop();
    await service.stop();
    await log.close();
    await deadLetters.close();
    await readSide.close();
    await store.close();
  };
});
