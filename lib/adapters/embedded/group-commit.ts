import type { AppendResult } from '../../ports/event-store';
import { fromFailure, type AppendRequest, type BatchReply } from './event-batch';
import type { EventWriter } from './event-writer';
import { storageFault, type StoreFile } from './sqlite';

/**
 * The event loop's side of the embedded store's group commit. An append resolves only once its
 * events are fsynced (synchronous = FULL), and an fsync costs far more than an insert, so appends
 * are committed together. They queue; at the end of the event loop's I/O phase the queue goes to
 * the writer as one BEGIN IMMEDIATE … COMMIT, and what is appended while that batch is being
 * written (new requests, and the follow-up appends of requests the batch resolved) forms the next
 * one. Each append's expected revision is checked by the writer (event-batch.ts), against the
 * stream as the earlier appends of its batch have left it.
 */

/** Since the store was opened: how well concurrent appends are committed together. */
export type GroupCommitStats = { readonly appends: number; readonly commits: number; readonly largestBatch: number };

export interface GroupCommit {
  /**
   * Queues the append for the next batch. Resolves once that batch is committed: with the
   * append's result, or null when it was skipped (its predecessor in an `appendInOrder`
   * sequence was not appended). Rejects when its insert failed, or the whole batch did.
   */
  submit(request: AppendRequest): Promise<AppendResult | null>;
  /** Commits everything queued and in flight, batch after batch (closing the store drops nothing). */
  drain(): Promise<void>;
  stats(): GroupCommitStats;
}

type PendingAppend = {
  readonly request: AppendRequest;
  readonly resolve: (result: AppendResult | null) => void;
  readonly reject: (err: unknown) => void;
};

export function createGroupCommit(file: StoreFile, writer: EventWriter, maxBatch: number, onAppended: () => void): GroupCommit {
  const queue: PendingAppend[] = [];
  const counts = { appends: 0, commits: 0, largestBatch: 0 };
  let writing: Promise<void> | null = null;
  let flushScheduled = false;

  const scheduleFlush = () => {
    if (flushScheduled) return;
    flushScheduled = true;
    // setImmediate, not a microtask: the flush waits for the rest of this I/O phase, so the
    // appends of every request whose data arrived in it join the same commit.
    setImmediate(flush);
  };

  /** Starts the next batch unless one is being written (its end starts the next). */
  function flush(): Promise<void> | null {
    flushScheduled = false;
    if (writing || queue.length === 0) return writing;
    const batch = queue.splice(0, batchSize(queue, maxBatch));
    writing = writer
      .commit(batch.map((p) => p.request))
      .then((reply) => {
        if (settle(file, batch, reply)) count(batch.length);
        if (committedAny(reply)) onAppended();
      })
      .finally(() => {
        writing = null;
        if (queue.length > 0) scheduleFlush();
      });
    return writing;
  }

  const count = (size: number) => {
    counts.commits += 1;
    counts.appends += size;
    counts.largestBatch = Math.max(counts.largestBatch, size);
  };

  return {
    submit: (request) =>
      new Promise<AppendResult | null>((resolve, reject) => {
        queue.push({ request, resolve, reject });
        scheduleFlush();
      }),
    async drain() {
      while (writing || queue.length > 0) await flush();
    },
    stats: () => ({ ...counts }),
  };
}

/** At most `maxBatch` appends, but an `appendInOrder` sequence is never cut in two: its order holds within one commit. */
function batchSize(queue: readonly PendingAppend[], maxBatch: number): number {
  let size = Math.min(maxBatch, queue.length);
  while (size < queue.length && queue[size].request.afterPrevious) size += 1;
  return size;
}

/** Hands each append its outcome; false when the whole batch failed (nothing of it was written). */
function settle(file: StoreFile, batch: readonly PendingAppend[], reply: BatchReply): boolean {
  if ('failure' in reply) {
    const err = fromFailure(reply.failure);
    const fault = storageFault(file, err) ?? err;
    for (const p of batch) p.reject(fault);
    return false;
  }
  reply.outcomes.forEach((o, i) =>
    'result' in o ? batch[i].resolve(o.result) : 'skipped' in o ? batch[i].resolve(null) : batch[i].reject(fromFailure(o.failure)),
  );
  return true;
}

const committedAny = (reply: BatchReply): boolean => 'outcomes' in reply && reply.outcomes.some((o) => 'result' in o && o.result.ok);
