import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import supertest from 'supertest';
import type { Authenticate } from '../../lib/app/tenancy';
import { AppError } from '../../lib/domain/errors';
import { createApiApp } from '../../lib/http/app';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createMetrics, type Metrics } from '../../lib/observability/metrics';
import { timedAppends, withChildMetrics } from '../../lib/observability/wiring';

// ---- test doubles -------------------------------------------------------------------------

const principal = {
  driveId: 'd1',
  driveName: 'Drive',
  userId: 'u1',
  firstName: '',
  lastName: '',
  tokenId: 't1',
  mediaSecondsAllowance: null,
};
const authenticate: Authenticate = async (authorization) => {
  if (authorization !== 'Bearer good') throw new AppError('unauthorized', 'invalid or revoked API token');
  return principal;
};

function appWith(metrics: Metrics) {
  const app = createApiApp(
    {
      logger: pino({ level: 'silent' }),
      authenticate,
      limiter: new RateLimiterMemory({ points: 1000, duration: 60 }),
      maxRequestBytes: 1024,
      metrics,
    },
    {
      mount: (v1) => {
        v1.get('/jobs/:job_id', (ctx) => {
          ctx.body = { job_id: ctx.params.job_id };
        });
        v1.post('/jobs/import/project_media', (ctx) => {
          ctx.status = 201;
          ctx.body = {};
        });
      },
    },
  );
  return supertest(app.callback());
}

/** The sample line of a series, e.g. `http_request_duration_seconds_count{...} 2`. */
const sample = (text: string, series: string) => text.split('\n').find((line) => line.startsWith(`${series} `));

// ---- scenarios ----------------------------------------------------------------------------

describe('metrics: Prometheus registry per service', () => {
  it('times requests by route pattern, never by raw path', async () => {
    const metrics = createMetrics();
    const http = appWith(metrics);
    await http.get('/v1/jobs/job-a').set('Authorization', 'Bearer good').expect(200);
    await http.get('/v1/jobs/job-b').set('Authorization', 'Bearer good').expect(200);
    const text = await metrics.registry.metrics();
    assert.equal(
      sample(text, 'http_request_duration_seconds_count{method="GET",route="/v1/jobs/:job_id",status="200"}')?.split(' ')[1],
      '2',
    );
    assert.doesNotMatch(text, /job-a|job-b/);
  });

  it('labels a request the auth guard refused with its route, not the guard', async () => {
    const metrics = createMetrics();
    await appWith(metrics).get('/v1/jobs/job-a').expect(401);
    const text = await metrics.registry.metrics();
    assert.ok(sample(text, 'http_request_duration_seconds_count{method="GET",route="/v1/jobs/:job_id",status="401"}'), text);
  });

  it('labels a request no route matched `unmatched`, whatever its path', async () => {
    const metrics = createMetrics();
    const http = appWith(metrics);
    for (const path of ['/nothing', '/v1/nothing', '/V1/jobs/job-a', `/x/${'y'.repeat(100)}`])
      await http.get(path).set('Authorization', 'Bearer good').expect(404);
    const text = await metrics.registry.metrics();
    assert.equal(sample(text, 'http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}')?.split(' ')[1], '4');
    assert.doesNotMatch(text, /nothing|yyyy/);
  });

  it('serves the registry at GET /metrics without a token, in the registry content type', async () => {
    const metrics = createMetrics();
    const http = appWith(metrics);
    await http.post('/v1/jobs/import/project_media').set('Authorization', 'Bearer good').send({}).expect(201);
    const res = await http.get('/metrics').expect(200);
    assert.equal(res.headers['content-type'], metrics.registry.contentType);
    assert.match(
      res.text,
      /http_request_duration_seconds_bucket\{le="0\.005",method="POST",route="\/v1\/jobs\/import\/project_media",status="201"\}/,
    );
    assert.match(res.text, /^process_cpu_user_seconds_total /m, 'default process metrics');
  });

  it('declares the job, consumer, relay and dead-letter metrics for the processors and relay to update', async () => {
    const metrics = createMetrics();
    metrics.jobsTotal.inc({ job_type: 'import/project_media', outcome: 'partial' });
    metrics.jobsRunning.set({ job_type: 'agent' }, 2);
    metrics.jobDuration.observe({ job_type: 'import/project_media', outcome: 'success' }, 12);
    metrics.consumerLag.set({ group: 'projections' }, 7);
    metrics.relayLag.set(3);
    metrics.deadLetters.inc({ source: 'webhooks' });
    const text = await metrics.registry.metrics();
    assert.ok(sample(text, 'jobs_total{job_type="import/project_media",outcome="partial"}'));
    assert.ok(sample(text, 'jobs_running{job_type="agent"}'));
    assert.ok(sample(text, 'job_duration_seconds_count{job_type="import/project_media",outcome="success"}'));
    assert.ok(sample(text, 'consumer_lag_events{group="projections"}'));
    assert.ok(sample(text, 'relay_lag_events'));
    assert.ok(sample(text, 'dead_letters_total{source="webhooks"}'));
  });

  it('reports a watched cache at each scrape: entries as a gauge, lookups as counters that only grow', async () => {
    const metrics = createMetrics();
    let stats = { entries: 3, hits: 10, misses: 4 };
    metrics.watchCache('job_answers', () => stats);
    const value = async (series: string) => sample(await metrics.registry.metrics(), series)?.split(' ')[1];
    assert.equal(await value('read_cache_entries{cache="job_answers"}'), '3');
    assert.equal(await value('read_cache_lookups_total{cache="job_answers",result="hit"}'), '10');
    assert.equal(await value('read_cache_lookups_total{cache="job_answers",result="miss"}'), '4');
    stats = { entries: 2, hits: 15, misses: 4 };
    assert.equal(await value('read_cache_entries{cache="job_answers"}'), '2');
    assert.equal(await value('read_cache_lookups_total{cache="job_answers",result="hit"}'), '15', 'scraped twice, counted once');
    // A cache made anew (its counts start again) adds what it counted since: the counter never goes back.
    stats = { entries: 1, hits: 2, misses: 1 };
    assert.equal(await value('read_cache_lookups_total{cache="job_answers",result="hit"}'), '17');
    assert.equal(await value('read_cache_lookups_total{cache="job_answers",result="miss"}'), '5');
  });

  it('reports admission control at each scrape: refusals as a counter, drives at their limit as a gauge', async () => {
    const metrics = createMetrics();
    let stats = { refused: 4, drivesAtLimit: 1 };
    metrics.watchAdmission(() => stats);
    const value = async (series: string) => sample(await metrics.registry.metrics(), series)?.split(' ')[1];
    assert.equal(await value('job_admission_refusals_total'), '4');
    assert.equal(await value('job_admission_drives_at_limit'), '1');
    stats = { refused: 9, drivesAtLimit: 0 };
    assert.equal(await value('job_admission_refusals_total'), '9', 'scraped twice, counted once');
    assert.equal(await value('job_admission_drives_at_limit'), '0');
  });

  it('times appends and appendInOrder sequences by outcome, and the store stays what it was', async () => {
    const metrics = createMetrics();
    const sqlite = createSqliteEventStore({ path: ':memory:' });
    const store = timedAppends(sqlite, metrics);
    const event = () => ({ id: randomUUID(), type: 'Noted', data: {}, metadata: { partition_key: 'p' } });
    assert.equal((await store.append('s-1', [event()], 'no_stream')).ok, true);
    assert.equal((await store.append('s-1', [event()], 'no_stream')).ok, false);
    const inOrder = await store.appendInOrder!([
      { streamId: 's-2', events: [event()], expected: 'no_stream' },
      { streamId: 's-3', events: [event()], expected: 'no_stream' },
    ]);
    assert.deepEqual(
      inOrder.map((r) => r.ok),
      [true, true],
    );
    await assert.rejects(store.append('s-4', [], 'no_stream'));
    const text = await metrics.registry.metrics();
    assert.equal(sample(text, 'event_store_append_seconds_count{outcome="ok"}')?.split(' ')[1], '2');
    assert.equal(sample(text, 'event_store_append_seconds_count{outcome="conflict"}')?.split(' ')[1], '1');
    assert.equal(sample(text, 'event_store_append_seconds_count{outcome="error"}')?.split(' ')[1], '1');
    // Everything else is the store's own: its SQLite methods too.
    assert.equal((store as typeof sqlite).headPosition(), 3);
    assert.equal((await store.readStream('s-1')).length, 1);
    await store.close();
  });

  it('keeps each registry to itself: two services in one process do not share series', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.relayLag.set(5);
    assert.ok(sample(await a.registry.metrics(), 'relay_lag_events')?.endsWith(' 5'));
    assert.ok(sample(await b.registry.metrics(), 'relay_lag_events')?.endsWith(' 0'));
  });
});

describe('metrics of the all-in-one mode (withChildMetrics)', () => {
  it('sums counters over the processes, and keeps each process’s event loop delay apart, by a process label', async () => {
    const own = createMetrics();
    const child = createMetrics();
    own.jobsTotal.inc({ job_type: 'import/project_media', outcome: 'success' }, 2);
    child.jobsTotal.inc({ job_type: 'import/project_media', outcome: 'success' }, 3);
    const combined = withChildMetrics(own, async () => [{ process: 'jobs', series: await child.registry.getMetricsAsJSON() }, null]);
    const text = await combined.registry.metrics();
    assert.match(text, /^jobs_total\{job_type="import\/project_media",outcome="success"\} 5$/m);
    assert.doesNotMatch(text, /^jobs_total\{[^}]*process=/m);
    for (const process of ['serve', 'jobs']) {
      assert.match(text, new RegExp(`^nodejs_eventloop_lag_p99_seconds\\{process="${process}"\\} [\\d.e+-]+$`, 'm'));
    }
    // Summed, not averaged: the CPU of all the processes.
    assert.match(text, /^process_cpu_seconds_total [\d.e+-]+$/m);
  });

  it('labels this process’s event loop delay the same while no worker answers (one being restarted)', async () => {
    const combined = withChildMetrics(createMetrics(), async () => [null, null]);
    assert.match(await combined.registry.metrics(), /^nodejs_eventloop_lag_p99_seconds\{process="serve"\} [\d.e+-]+$/m);
  });
});
