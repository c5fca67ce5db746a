import { AggregatorRegistry, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { DeadLetterStore } from '../ports/dead-letters';
import type { AllOrNothing, AppendResult, EventStore } from '../ports/event-store';
import type { LogSubscription } from '../ports/event-log';
import type { Metrics } from './metrics';

/** Connects the metrics to the pieces composition roots assemble (no piece imports prom-client). */

type JobLike = { job_id: string; job_type: string };
type Outcome = 'success' | 'partial' | 'error' | 'cancelled' | 'lost' | 'interrupted';

/** A job observer for the runner: running gauge, finished counter and durations. */
export function jobMetrics(metrics: Metrics) {
  const running = new Set<string>();
  return {
    started(job: JobLike) {
      running.add(job.job_id);
      metrics.jobsRunning.inc({ job_type: job.job_type });
    },
    finished(job: JobLike, outcome: Outcome, seconds: number) {
      // A job given up at its claim never ran here.
      if (running.delete(job.job_id)) metrics.jobsRunning.dec({ job_type: job.job_type });
      // A lost claim or a shutdown is not the job's end: another attempt finishes it.
      if (outcome === 'lost' || outcome === 'interrupted') return;
      metrics.jobsTotal.inc({ job_type: job.job_type, outcome });
      metrics.jobDuration.observe({ job_type: job.job_type, outcome }, seconds);
    },
  };
}

/**
 * Times each append and `appendInOrder` or `appendAll` sequence into `event_store_append_seconds`: `conflict`
 * when any append of it found its stream moved, `error` when it threw. The store's other methods
 * are its own (the copy inherits them), so a SQLite store stays one.
 */
export function timedAppends<S extends EventStore>(store: S, metrics: Pick<Metrics, 'eventStoreAppend'>): S {
  const timed = Object.create(store) as S;
  const observe = async <T extends AppendResult | AppendResult[] | AllOrNothing>(append: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      const result = await append();
      const ok = Array.isArray(result) ? result.every((r) => r.ok) : result.ok;
      metrics.eventStoreAppend.observe({ outcome: ok ? 'ok' : 'conflict' }, (performance.now() - started) / 1000);
      return result;
    } catch (err) {
      metrics.eventStoreAppend.observe({ outcome: 'error' }, (performance.now() - started) / 1000);
      throw err;
    }
  };
  timed.append = (streamId, events, expected) => observe(() => store.append(streamId, events, expected));
  const inOrder = store.appendInOrder?.bind(store);
  if (inOrder) timed.appendInOrder = (appends) => observe(() => inOrder(appends));
  const all = store.appendAll?.bind(store);
  if (all) timed.appendAll = (appends) => observe(() => all(appends));
  return timed;
}

/** Counts letters as they are written. */
export function countingDeadLetters<S extends DeadLetterStore>(store: S, metrics: Metrics): S {
  // Adapters are closures over their state (no `this`), so a copy with another `put` is whole.
  return {
    ...store,
    async put(letter) {
      const written = await store.put(letter);
      metrics.deadLetters.inc({ source: letter.source });
      return written;
    },
  };
}

/** What the projector reports, into `metrics`: each event's lag per read model, each batch's size. */
export function projectorObservers(metrics: Metrics) {
  return {
    observeLag: (model: string, seconds: number) => metrics.projectionLag.observe({ read_model: model }, seconds),
    observeBatch: (events: number) => metrics.projectorBatch.observe(events),
  };
}

/** Samples each subscription's lag into the consumer-lag gauge every few seconds. */
export function watchLag(metrics: Metrics, subscriptions: readonly LogSubscription[], everyMs = 5000) {
  const sample = () => {
    for (const s of subscriptions) {
      const { group, lag } = s.status();
      if (lag !== null) metrics.consumerLag.set({ group }, lag);
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** One worker process's series, as it reports them over IPC, and which part it is (`projector`, `jobs`). */
export type ChildSeries = { readonly process: string; readonly series: unknown };

type Series = MetricObjectWithValues<MetricValue<string>>[];

/**
 * A process's series with a `process` label on those that summing would not make right: what
 * prom-client averages, keeps the least or most of, or takes one of across processes (the event
 * loop's delay, the heap, the version). An average of a busy event loop and two idle ones said
 * nothing about either; each process's own value is what an operator compares.
 */
function labelledAsIts(series: Series, process: string): Series {
  return series.map((metric) =>
    (metric.aggregator ?? 'sum') === 'sum'
      ? metric
      : { ...metric, values: metric.values.map((v) => ({ ...v, labels: { ...v.labels, process } })) },
  );
}

/**
 * The metrics `GET /metrics` serves in the all-in-one mode: this process's (`serve`), plus those
 * each worker process reports over IPC (jobs, lag, dead letters), merged by prom-client's
 * aggregator (counters and histograms summed, as across cluster workers; per-process gauges kept
 * apart by a `process` label, see `labelledAsIts`). A child that does not answer is left out.
 */
export function withChildMetrics(
  own: Metrics,
  children: () => Promise<readonly (ChildSeries | null)[]>,
): Pick<Metrics, 'registry' | 'httpRequestDuration'> {
  class Combined extends Registry {
    override async metrics(): Promise<string> {
      const answered: readonly (ChildSeries | null)[] = await children().catch(() => []);
      const theirs = answered.filter((c): c is ChildSeries => c !== null && Array.isArray(c.series));
      // Labelled even when no child answers (one being restarted): a series keeps its labels.
      const ours = (await own.registry.getMetricsAsJSON()) as Series;
      return AggregatorRegistry.aggregate([
        labelledAsIts(ours, 'serve'),
        ...theirs.map((c) => labelledAsIts(c.series as Series, c.process)),
      ]).metrics();
    }
  }
  return { registry: new Combined(), httpRequestDuration: own.httpRequestDuration };
}
