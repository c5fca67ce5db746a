import { openConsumerSide } from '../../lib/adapters/consumer-side';
import { listen } from '../../lib/http/listen';
import { createMetrics } from '../../lib/observability/metrics';
import { jobMetrics, watchLag } from '../../lib/observability/wiring';
import { exitOnFatal, runService } from '../../lib/run-service';
import Koa from 'koa';
import { processorsDeps } from './from-config';
import { start } from './index';

/**
 * Composition root of the processors (scale out: instances share each job type's consumer
 * group). It serves `/healthz`, `/readyz` and `/metrics` on PORT for the orchestrator.
 */
runService('processors', async (config, logger) => {
  const metrics = createMetrics();
  const consumers = await openConsumerSide(config, logger, metrics);
  const { store, readSide, log } = consumers;
  const service = await start(
    processorsDeps(config, logger, { store, read: readSide.read, log }, { observer: jobMetrics(metrics), onFatal: exitOnFatal(logger) }),
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
    await consumers.close();
  };
});
