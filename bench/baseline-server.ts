import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import { createServer } from 'node:http';

/**
 * The floor the bench measures the service against: the same HTTP stack (Koa, @koa/router,
 * @koa/bodyparser on node:http) with nothing of ours on it. Runs in its own process so that it
 * never shares a core's event loop with the load generator. `PORT` comes from the environment;
 * the line `ready <port>` on stdout says it is listening.
 *
 * Two kinds of route:
 * - the same exchange as the service's route: the same method and path, answered with a sample
 *   of the service's own answer (`BASELINE_POST_ANSWER`, `BASELINE_GET_ANSWER`: JSON texts the
 *   bench takes from the service), as a Koa handler would answer it (an object, serialized by
 *   Koa per request). The request bytes and the answer's body are then the same on both sides,
 *   so what the ratio measures is what the service does beyond HTTP: token, rate limit, the
 *   store, its headers, logs and metrics;
 * - `/post` and `/get`: a 30-byte answer to a bare path, the baseline of earlier runs, still
 *   measured and shown so the figures stay comparable.
 */

const port = Number(process.env.PORT ?? 0);
const answer = (name: string): Record<string, unknown> => JSON.parse(process.env[name] ?? '{}') as Record<string, unknown>;
const postAnswer = answer('BASELINE_POST_ANSWER');
const getAnswer = answer('BASELINE_GET_ANSWER');
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
router.post('/v1/jobs/import/project_media', (ctx) => {
  ctx.status = 201;
  ctx.body = postAnswer;
});
router.get('/v1/jobs/:job_id', (ctx) => {
  ctx.body = { ...getAnswer, job_id: ctx.params.job_id };
});

app.use(bodyParser({ enableTypes: ['json'] }));
app.use(router.routes());

const server = createServer(app.callback());
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`ready ${typeof address === 'object' && address ? address.port : port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
