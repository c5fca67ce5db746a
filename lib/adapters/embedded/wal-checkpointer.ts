import type Database from 'better-sqlite3';
import type { Worker } from 'node:worker_threads';
import { passiveCheckpoint } from './sqlite';
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

/**
 * The process's one checkpoint thread, for every file: a thread costs about 10 MB (measured), and
 * the projector writes two files. Started at the first checkpoint asked for, ended once no file
 * uses it; referenced only while a checkpoint runs, so it never keeps the process alive.
 */
type Shared = { worker: Worker; users: Map<number, () => void>; running: number };
let nextUser = 0;
let shared: Shared | null = null;

function sharedThread(): Shared {
  if (shared) return shared;
  const worker = startWorker('wal-checkpoint-thread', {});
  const thread: Shared = { worker, users: new Map(), running: 0 };
  worker.on('message', ({ user }: { user: number }) => {
    thread.running -= 1;
    if (thread.running === 0) worker.unref();
    thread.users.get(user)?.();
  });
  // A thread that stopped is started again by the next checkpoint; meanwhile the backstop holds.
  const gone = () => {
    if (shared === thread) shared = null;
    for (const done of thread.users.values()) done();
  };
  worker.on('error', gone);
  worker.on('exit', gone);
  return (shared = thread);
}

/** `db`: the committing connection, for the idle checkpoint of a process without a thread. */
export function walCheckpointer(db: Database.Database, options: WalCheckpointOptions = {}): WalCheckpointer {
  const everyCommits = options.everyCommits ?? 64;
  const idleMs = options.idleMs ?? 1000;
  const path = db.name;
  const user = nextUser++;
  let thread: Shared | null = null;
  let running = false;
  let again = false;
  let closed = false;
  let commits = 0;
  let idle: NodeJS.Timeout | undefined;

  const done = () => {
    running = false;
    if (again) run();
  };

  const run = () => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    again = false;
    running = true;
    if (!thread || thread !== shared) {
      thread = sharedThread();
      thread.users.set(user, done);
    }
    thread.running += 1;
    thread.worker.ref();
    thread.worker.postMessage({ checkpoint: path, user });
  };

  const whenIdle = () => {
    if (closed) return;
    if (thread && thread === shared) return run();
    passiveCheckpoint(() => db);
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
      const t = thread;
      thread = null;
      if (!t || t !== shared) return;
      t.users.delete(user);
      // The thread closes this file's connection; the last file to go ends the thread.
      t.worker.postMessage({ close: user });
      if (t.users.size > 0) return;
      shared = null;
      t.worker.ref();
      const exited = new Promise<void>((resolve) => t.worker.once('exit', () => resolve()));
      t.worker.postMessage({ exit: true });
      await exited;
    },
  };
}
