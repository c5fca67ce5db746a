import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import { createServer } from 'node:http';

/**
 * The floor the bench measures the service against: the same HTTP stack (Koa, @koa/router,
 * @koa/bodyparser on node:http) with nothing of ours on it. Runs in its own process so that it
 * never shares a core's event loop with the load generator. `PORT` comes from the environment;
 * the line `ready <port>` on stdout says it is listening.
 */

const port = Number(process.env.PORT ?? 0);
const app = new Koa();
const router = new Router();

router.post('/post', (ctx) => {
  const body = ctx.request.body as Record<string, unknown> | undefined;
  ctx.status = 201;
  ctx.body = { id: 'baseline', keys: Object.keys(body ?? {}).length };
});
router.get('/get', (ctx) => {
  ctx.body = { id: 'baseline', status: 'ok' };
});

app.use(bodyParser({ enableTypes: ['json'] }));
app.use(router.routes());

const server = createServer(app.callback());
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`ready ${typeof address === 'object' && address ? address.port : port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
