import type { AdmissionStats } from '../app/admission';
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

/** What an in-memory cache of the read path reports: entries held, and lookups since it was made. */
export type CacheStats = { readonly entries: number; readonly hits: number; readonly misses: number };

/** Seconds. HTTP answers are expected in milliseconds; jobs run from seconds to an hour. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** From 1 ms (a group commit on an idle disk) to 2.5 s (a disk that stalls). */
const APPEND_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/**
 * Projection lag and read waits: milliseconds to seconds (p50 and p99 by `histogram_quantile`),
 * finer from 20 to 100 ms, where a busy projector's lag lies and its 50 ms goal is judged.
 */
const LAG_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5, 10];
const JOB_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** What the webhook dispatcher reports: attempts in flight, the drives holding them, and the most one drive holds. */
export type WebhookSlots = { readonly inFlight: number; readonly drives: number; readonly most: number };

export function createMetrics(options: { defaultLabels?: Record<string, string> } = {}) {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  // Caches report their own plain counts (no metric call on a hot path); read at each scrape.
  const caches = new Map<string, () => CacheStats>();
  const counted = new Map<string, { hits: number; misses: number }>();
  let webhookSlots: () => WebhookSlots = () => ({ inFlight: 0, drives: 0, most: 0 });
  let jobEventStreams: () => JobEventStreamStats = () => ({ open: 0, watchedJobs: 0 });
  let admission: () => AdmissionStats = () => ({ refused: 0, drivesAtLimit: 0 });
  let refusedCounted = 0;
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
    readCacheEntries: new Gauge({
      name: 'read_cache_entries',
      help: 'Entries held by an in-memory cache of the read path, by cache',
      labelNames: ['cache'] as const,
      registers,
      collect() {
        for (const [cache, stats] of caches) this.set({ cache }, stats().entries);
      },
    }),
    readCacheLookups: new Counter({
      name: 'read_cache_lookups_total',
      help: 'Lookups in an in-memory cache of the read path, by cache and result (hit, miss)',
      labelNames: ['cache', 'result'] as const,
      registers,
      collect() {
        for (const [cache, stats] of caches) {
          const now = stats();
          const before = counted.get(cache) ?? { hits: 0, misses: 0 };
          // Counts only grow, unless the cache was made anew: then all it counted is new.
          const since = (n: number, b: number) => (n >= b ? n - b : n);
          this.inc({ cache, result: 'hit' }, since(now.hits, before.hits));
          this.inc({ cache, result: 'miss' }, since(now.misses, before.misses));
          counted.set(cache, { hits: now.hits, misses: now.misses });
        }
      },
    }),
    /** Events the projector applied together (services/query-api/projector.ts): the busier the log, the larger. */
    projectorBatch: new Histogram({
      name: 'projector_batch_events',
      help: 'Events the projector applied together in one batch (one read-store transaction)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers,
    }),
    /** From the append of an event to its projection, by read model (read-your-writes waits about this long). */
    projectionLag: new Histogram({
      name: 'projection_lag_seconds',
      help: 'Time from an event being appended to its being applied to a read model, by read model',
      labelNames: ['read_model'] as const,
      buckets: LAG_BUCKETS,
      registers,
    }),
    /**
     * An append (or an `appendInOrder` sequence) as the process that asked sees it: on the embedded
     * store, the wait for its group commit and the commit's fsync; on EventStoreDB, the round trip.
     * Every accepted import waits this long before its 201, so its tail is the accept path's.
     */
    eventStoreAppend: new Histogram({
      name: 'event_store_append_seconds',
      help: 'Time from asking the event store to append to its answer, by outcome (ok, conflict, error)',
      labelNames: ['outcome'] as const,
      buckets: APPEND_BUCKETS,
      registers,
    }),
    /** Reads that waited for their token's writes (or a final job's effects) to be projected. */
    readFenceWait: new Histogram({
      name: 'read_fence_wait_seconds',
      help: 'Time a read waited for the writes it must reflect to be projected, by outcome (waited, timed_out)',
      labelNames: ['outcome'] as const,
      buckets: LAG_BUCKETS,
      registers,
    }),
    /**
     * The dispatcher's fair queue (issue 19): no label per drive (drive ids are not a small set),
     * but how many drives hold slots and the most one holds, which shows a tenant at its cap.
     */
    webhookSlots: new Gauge({
      name: 'webhook_attempts_in_flight',
      help: 'Webhook attempts in flight in this dispatcher (what), the drives holding them (drives) and the most one drive holds (most_per_drive)',
      labelNames: ['what'] as const,
      registers,
      collect() {
        const now = webhookSlots();
        this.set({ what: 'attempts' }, now.inFlight);
        this.set({ what: 'drives' }, now.drives);
        this.set({ what: 'most_per_drive' }, now.most);
      },
    }),
    /** The live job event streams (GET /v1/jobs/{id}/events) this query API holds open, and the jobs they watch. */
    jobEventStreams: new Gauge({
      name: 'job_event_streams',
      help: 'Job event streams open in this query API (open) and the jobs they watch (watched_jobs)',
      labelNames: ['what'] as const,
      registers,
      collect() {
        const now = jobEventStreams();
        this.set({ what: 'open' }, now.open);
        this.set({ what: 'watched_jobs' }, now.watchedJobs);
      },
    }),
    /** Jobs refused by admission control (lib/app/admission.ts): a drive had as many unfinished jobs as it may. */
    admissionRefusals: new Counter({
      name: 'job_admission_refusals_total',
      help: 'Job requests answered 429 because their drive had as many unfinished jobs as it may (MAX_UNFINISHED_JOBS_PER_DRIVE)',
      registers,
      collect() {
        const now = admission().refused;
        this.inc(now >= refusedCounted ? now - refusedCounted : now);
        refusedCounted = now;
      },
    }),
    admissionDrivesAtLimit: new Gauge({
      name: 'job_admission_drives_at_limit',
      help: 'Drives this command API last counted at their limit of unfinished jobs',
      registers,
      collect() {
        this.set(admission().drivesAtLimit);
      },
    }),
    /** Reports admission control in `job_admission_refusals_total` and `job_admission_drives_at_limit`, read at each scrape. */
    watchAdmission(stats: () => AdmissionStats) {
      admission = stats;
    },
    /** Reports the query API's job event streams in `job_event_streams`, read at each scrape. */
    watchJobEvents(stats: () => JobEventStreamStats) {
      jobEventStreams = stats;
    },
    /** Reports the webhook dispatcher's slots in `webhook_attempts_in_flight`, read at each scrape. */
    watchWebhooks(stats: () => WebhookSlots) {
      webhookSlots = stats;
    },
    /** Reports `stats` as the cache `name` in `read_cache_entries` and `read_cache_lookups_total`. */
    watchCache(name: string, stats: () => CacheStats) {
      caches.set(name, stats);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

export type JobEventStreamStats = { open: number; watchedJobs: number };
