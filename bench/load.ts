import autocannon from 'autocannon';

/**
 * One load figure: autocannon in the bench's own process against a server in another. The
 * warm-up runs first with the same requests and is discarded (JIT, connection pools, caches).
 * Baseline and service get the same options, including the response callback, so the load
 * generator costs the same on both sides.
 */

export type LoadOptions = {
  url: string;
  method: 'GET' | 'POST';
  /** The status every response must have; any other is counted and shown. */
  expect: number;
  connections: number;
  warmupSeconds: number;
  seconds: number;
  headers?: Record<string, string>;
  body?: string;
  /** A path per request (rotating over ids); default: the url's path. */
  nextPath?: () => string;
  /** Sees every expected response's body (the accept phase collects job ids with it). */
  onBody?: (body: string) => void;
};

export type LoadResult = {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Responses other than `expect`, by status, plus socket errors and timeouts. */
  unexpected: Map<string, number>;
  /** A few bodies of unexpected responses, to say what went wrong. */
  samples: string[];
};

async function run(options: LoadOptions, seconds: number, onBody?: (body: string) => void): Promise<LoadResult> {
  const samples: string[] = [];
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: seconds,
    method: options.method,
    headers: { ...options.headers, ...(options.body ? { 'content-type': 'application/json' } : {}) },
    body: options.body,
    requests: [
      {
        setupRequest: (req) => (options.nextPath ? { ...req, path: options.nextPath() } : req),
        onResponse: (status, body) => {
          if (status === options.expect) onBody?.(body);
          else if (samples.length < 5) samples.push(`${status} ${body.slice(0, 300)}`);
        },
      },
    ],
  });
  const unexpected = new Map<string, number>();
  for (const [status, { count = 0 }] of Object.entries(result.statusCodeStats ?? {})) {
    if (Number(status) !== options.expect && count > 0) unexpected.set(status, count);
  }
  if (result.errors > 0) unexpected.set('socket errors', result.errors);
  if (result.timeouts > 0) unexpected.set('timeouts', result.timeouts);
  return {
    requestsPerSecond: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    unexpected,
    samples,
  };
}

/** Unexpected responses of the warm-up count too: every response must have the expected status. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const warm = options.warmupSeconds > 0 ? await run(options, options.warmupSeconds, options.onBody) : null;
  const measured = await run(options, options.seconds, options.onBody);
  for (const [what, n] of warm?.unexpected ?? []) measured.unexpected.set(what, (measured.unexpected.get(what) ?? 0) + n);
  measured.samples.unshift(...(warm?.samples ?? []).slice(0, 5 - measured.samples.length));
  return measured;
}
