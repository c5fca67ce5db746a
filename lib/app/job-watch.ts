/**
 * The one waker behind every live job event stream (`GET /v1/jobs/{id}/events`): it listens to
 * the read models' watermark (lib/app/consistency.ts) and, each time it moved, reads each watched
 * job once, however many streams watch it, and hands the result to them. A stream never runs a
 * timer or reads the store on its own. Without a watermark that tells of its moves, one shared
 * timer stands in for it.
 *
 * Reads are coalesced per job: while one is in flight, further moves mark the job to be read
 * again once it returns, so a busy projector costs at most one read in flight per watched job.
 */

export type JobWatch<T> = {
  /** Calls `seen` with the job as read after each move (and at once) until the returned function is called. */
  watch(jobId: string, seen: (job: T | null) => void): () => void;
  /** Jobs and watchers now (the tests check that a closed stream leaves none). */
  size(): { jobs: number; watchers: number };
  /** Stops listening; watchers are told nothing more. */
  stop(): void;
};

type Watched<T> = { readonly watchers: Set<(job: T | null) => void>; reading: boolean; again: boolean };

/** How often jobs are read again when there is no watermark to listen to. */
const FALLBACK_POLL_MS = 100;

export function createJobWatch<T>(deps: {
  /** What tells of the watermark's moves (`Watermark.onMove`); absent: a shared timer. */
  onMove?: (listener: () => void) => () => void;
  read: (jobId: string) => Promise<T | null>;
  /** A read that failed (the store is down): the watchers keep waiting for the next move. */
  onError?: (err: unknown, jobId: string) => void;
  fallbackPollMs?: number;
}): JobWatch<T> {
  const watched = new Map<string, Watched<T>>();
  let unlisten: (() => void) | null = null;

  const readOnce = async (jobId: string, entry: Watched<T>) => {
    entry.reading = true;
    do {
      entry.again = false;
      try {
        const job = await deps.read(jobId);
        for (const seen of entry.watchers) seen(job);
      } catch (err) {
        deps.onError?.(err, jobId);
      }
    } while (entry.again && watched.get(jobId) === entry);
    entry.reading = false;
  };
  const wake = (jobId: string, entry: Watched<T>) => {
    if (entry.reading) entry.again = true;
    else void readOnce(jobId, entry);
  };
  const moved = () => {
    for (const [jobId, entry] of watched) wake(jobId, entry);
  };
  const listen = () => {
    if (deps.onMove) return deps.onMove(moved);
    const timer = setInterval(moved, deps.fallbackPollMs ?? FALLBACK_POLL_MS);
    timer.unref();
    return () => clearInterval(timer);
  };

  return {
    watch(jobId, seen) {
      let entry = watched.get(jobId);
      if (!entry) {
        entry = { watchers: new Set(), reading: false, again: false };
        watched.set(jobId, entry);
      }
      // Wrapped: the same function watching twice is two watchers.
      const watcher = (job: T | null) => seen(job);
      entry.watchers.add(watcher);
      unlisten ??= listen();
      // The first read for this watcher: what it may have missed before it was listening.
      wake(jobId, entry);
      const mine = entry;
      return () => {
        mine.watchers.delete(watcher);
        if (mine.watchers.size === 0 && watched.get(jobId) === mine) watched.delete(jobId);
        if (watched.size === 0 && unlisten) {
          unlisten();
          unlisten = null;
        }
      };
    },
    size: () => ({ jobs: watched.size, watchers: [...watched.values()].reduce((n, e) => n + e.watchers.size, 0) }),
    stop() {
      unlisten?.();
      unlisten = null;
      watched.clear();
    },
  };
}
