import type Database from 'better-sqlite3';
import type { Worker } from 'node:worker_threads';
import { startWorker } from './threads';

/**
 * Checkpoints of a read-side file (the read store, the search index) on a thread of their own.
 *
 * By default SQLite checkpoints on the connection whose commit takes the WAL past 1,000 pages:
 * that commit copies every page back into the database and fsyncs it before it returns, on the
 * event loop of whichever process committed: the projector, or `serve`, which records each
 * token's write position in the read store. Under bench (f) that was a stall of 10–30 ms every few
 * seconds, in the projection lag and in the accept path's tail. Here, every `everyCommits`
 * commits a PASSIVE checkpoint runs on another connection, in a worker thread started at the
 * first of them; the committing connection's own checkpoint stays as a backstop at
 * `BACKSTOP_PAGES`. Once commits pause (`idleMs`) one more copies what is left, frames a reader
 * held at the last one included, so reads need not search the WAL: on the thread if this process
 * has one, else on the connection itself (a process that commits rarely has little to copy, and
 * no thread to start).
 *
 * PASSIVE checkpoints of two processes do not wait on each other (the second finds the first at
 * work and returns).
 */
export interface WalCheckpointer {
  /** Called after each commit. */
  committed(): void;
  close(): Promise<void>;
}

export type WalCheckpointOptions = {
  /** Commits between checkpoints on the thread (64). */
  everyCommits?: number;
  /** A checkpoint once commits pause this long (1 s). */
  idleMs?: number;
};

/** WAL pages after which a committing connection checkpoints itself, when the thread could not. */
export const BACKSTOP_PAGES = 10_000;

/** Raises the committing connection's own checkpoint to the backstop: the thread does the work. */
export function leaveCheckpointsToThread(db: Database.Database): void {
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
}

/** `db`: the committing connection, for the idle checkpoint of a process without a thread. */
export function walCheckpointer(db: Database.Database, options: WalCheckpointOptions = {}): WalCheckpointer {
  const everyCommits = options.everyCommits ?? 64;
  const idleMs = options.idleMs ?? 1000;
  let worker: Worker | null = null;
  let running = false;
  let again = false;
  let closed = false;
  let commits = 0;
  let idle: NodeJS.Timeout | undefined;

  const thread = (): Worker => {
    if (worker) return worker;
    const started = startWorker('wal-checkpoint-thread', { path: db.name });
    started.on('message', () => {
      running = false;
      started.unref();
      if (again) run();
    });
    // A thread that stopped is started again by the next checkpoint; meanwhile the backstop holds.
    const gone = () => {
      if (worker === started) worker = null;
      running = false;
    };
    started.on('error', gone);
    started.on('exit', gone);
    return (worker = started);
  };

  const run = () => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    again = false;
    running = true;
    const w = thread();
    w.ref();
    w.postMessage({ checkpoint: true });
  };

  const whenIdle = () => {
    if (closed) return;
    if (worker) return run();
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // Busy or a storage fault: the next commit schedules another; faults surface on reads and writes.
    }
  };

  return {
    committed() {
      if (closed) return;
      commits += 1;
      if (commits >= everyCommits) {
        commits = 0;
        run();
      }
      if (idle) idle.refresh();
      else idle = setTimeout(whenIdle, idleMs).unref();
    },
    async close() {
      closed = true;
      clearTimeout(idle);
      const w = worker;
      worker = null;
      if (!w) return;
      w.ref();
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ close: true });
      await exited;
    },
  };
}
