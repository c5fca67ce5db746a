import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics, made per composition root (STYLE §5): prom-client's global
 * registry would be a module-level singleton, shared by every app a test or the all-in-one server
 * builds in one process.
 *
 * Label values must come from small fixed sets (route patterns, job types, outcomes, consumer
 * groups), never from request data: each distinct value is a time series kept for the process's
 * life.
 */

export type JobOutcome = 'success' | 'partial' | 'error' | 'cancelled';

/** Seconds. HTTP answers are expected in milliseconds; jobs run from seconds to an hour. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

export function createMetrics(options: { defaultLabels?: Record<string, string> } = {}) {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    /** Labelled by the matched route pattern (`/v1/jobs/:job_id`), `unmatched` when none matched. */
    httpRequestDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: HTTP_BUCKETS,
      registers,
    }),
    /** Jobs finished, by outcome (`JobOutcome`). */
    jobsTotal: new Counter({
      name: 'jobs_total',
      help: 'Jobs finished, by job type and outcome (success, partial, error, cancelled)',
      labelNames: ['job_type', 'outcome'] as const,
      registers,
    }),
    jobsRunning: new Gauge({
      name: 'jobs_running',
      help: 'Jobs running in this process, by job type',
      labelNames: ['job_type'] as const,
      registers,
    }),
    jobDuration: new Histogram({
      name: 'job_duration_seconds',
      help: 'Time from a job starting to its end, by job type and outcome',
      labelNames: ['job_type', 'outcome'] as const,
      buckets: JOB_BUCKETS,
      registers,
    }),
    consumerLag: new Gauge({
      name: 'consumer_lag_events',
      help: 'Events in the log not yet handled by a consumer group',
      labelNames: ['group'] as const,
      registers,
    }),
    relayLag: new Gauge({
      name: 'relay_lag_events',
      help: 'Events in the event store not yet published to the log by the relay',
      registers,
    }),
    deadLetters: new Counter({
      name: 'dead_letters_total',
      help: 'Messages set aside after their handler kept failing, by source',
      labelNames: ['source'] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
