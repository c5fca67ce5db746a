/**
 * The bounded pool jobs run in, fair across drives (DESIGN §1): a drive may hold at most
 * `maxPerDrive` of the `concurrency` slots, and when a slot frees, the waiting drive that has
 * waited longest since its last turn goes next (round robin), so one drive's slow jobs never take
 * every slot while another drive's jobs wait.
 */

type Deferred<T> = { promise: Promise<T>; resolve: (v: T | PromiseLike<T>) => void; reject: (e: unknown) => void };
type Task = { readonly key: string; readonly run: () => Promise<void>; readonly done: Deferred<void> };

export interface FairPool {
  /**
   * Runs `run` when a slot is free for `group` (a drive). A second submit of a `key` already
   * queued or running returns the first one's promise (a redelivered job is not run twice here).
   */
  submit(group: string, key: string, run: () => Promise<void>): Promise<void>;
  /** Resolves once nothing runs (waiting tasks included: after a shutdown they end at once). */
  idle(): Promise<void>;
  /** Jobs running and waiting, for metrics and tests. */
  stats(): { running: number; waiting: number; byGroup: Record<string, { running: number; waiting: number }> };
}

const withResolvers = <T>(): Deferred<T> => {
  let resolve!: (v: T | PromiseLike<T>) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
};

export function createFairPool(options: { concurrency: number; maxPerDrive?: number }): FairPool {
  const concurrency = Math.max(1, options.concurrency);
  // One slot is kept for other drives whenever there are two or more.
  const maxPerGroup = Math.max(1, options.maxPerDrive ?? (concurrency > 1 ? concurrency - 1 : 1));
  const queues = new Map<string, Task[]>(); // insertion order = round-robin order
  const running = new Map<string, number>();
  const known = new Map<string, Promise<void>>();
  let active = 0;
  const onIdle: (() => void)[] = [];

  const pump = () => {
    while (active < concurrency) {
      const next = [...queues.entries()].find(([group, q]) => q.length > 0 && (running.get(group) ?? 0) < maxPerGroup);
      if (!next) return;
      const [group, queue] = next;
      const task = queue.shift()!;
      // Move the group to the back: the others get the next free slots first.
      queues.delete(group);
      if (queue.length > 0) queues.set(group, queue);
      active++;
      running.set(group, (running.get(group) ?? 0) + 1);
      void Promise.resolve()
        .then(task.run)
        .then(task.done.resolve, task.done.reject)
        .finally(() => {
          active--;
          const left = (running.get(group) ?? 1) - 1;
          if (left === 0) running.delete(group);
          else running.set(group, left);
          known.delete(task.key);
          pump();
          if (known.size === 0) for (const resolve of onIdle.splice(0)) resolve();
        });
    }
  };

  return {
    submit(group, key, run) {
      const existing = known.get(key);
      if (existing) return existing;
      const task: Task = { key, run, done: withResolvers<void>() };
      known.set(key, task.done.promise);
      const queue = queues.get(group);
      if (queue) queue.push(task);
      else queues.set(group, [task]);
      pump();
      return task.done.promise;
    },
    idle() {
      return known.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => onIdle.push(resolve));
    },
    stats() {
      const byGroup: Record<string, { running: number; waiting: number }> = {};
      for (const [g, n] of running) byGroup[g] = { running: n, waiting: 0 };
      for (const [g, q] of queues) if (q.length) byGroup[g] = { running: running.get(g) ?? 0, waiting: q.length };
      return { running: active, waiting: [...queues.values()].reduce((n, q) => n + q.length, 0), byGroup };
    },
  };
}
