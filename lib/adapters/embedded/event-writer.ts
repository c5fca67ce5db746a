import type Database from 'better-sqlite3';
import type { Worker } from 'node:worker_threads';
import { createBatchCommitter, toFailure, type AppendRequest, type BatchReply, type EventDbOptions, type FailureData } from './event-batch';
import { startWorker } from './threads';

/**
 * Where the event store's batches are committed. better-sqlite3 is synchronous, so a commit on
 * the event loop's thread would hold every request up for the inserts and the fsync. The writer
 * thread has its own connection and commits there; the event loop goes on parsing requests,
 * which queue up as the next batch. Reads stay on the store's own connection: WAL lets them run
 * beside the writer, and they see a batch as soon as its commit returned.
 *
 * Checkpoints (copying the WAL back into the file) get a thread of their own too: run by the
 * committing connection, as SQLite does by default, they stalled one commit in sixteen for
 * 10–20 ms; a passive checkpoint on another connection runs beside the writer instead.
 */

export interface EventWriter {
  /** Never rejects: a failure is in the reply, for the whole batch or per append. */
  commit(batch: readonly AppendRequest[]): Promise<BatchReply>;
  /** Call once no batch is in flight. */
  close(): Promise<void>;
  /** Present when consumer checkpoints are saved by this writer too (the file's writer is in another process). */
  saveCheckpoint?(group: string, position: number): void;
  /** Present when this writer also commits other processes' batches: resolves once it takes them. */
  listening?(): Promise<void>;
}

/** On the caller's connection: for an in-memory database (which no other connection can see) and read-only stores. */
export function inlineWriter(db: Database.Database): EventWriter {
  const commit = createBatchCommitter(db);
  return { commit: async (batch) => commit(batch), close: async () => undefined };
}

/** Commits between checkpoints: about a thousand WAL pages when batches are large. */
const CHECKPOINT_EVERY_COMMITS = 32;

type Thread = { worker: Worker; closed: Promise<void> };

function startThread(
  role: 'writer' | 'checkpointer',
  path: string,
  options: EventDbOptions,
  onExit: (err: Error) => void,
  socketPath?: string,
): Thread {
  // Referenced only while a batch is in flight: an idle store does not keep the process alive.
  const worker = startWorker('event-writer-thread', { path, options, role, socketPath });
  const closed = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.on('error', onExit);
  worker.on('exit', (code) => onExit(new Error(`the event store's ${role} thread stopped (exit code ${code})`)));
  return { worker, closed };
}

async function stopThread(thread: Thread | null) {
  if (!thread) return;
  thread.worker.ref();
  thread.worker.postMessage({ close: true });
  await thread.closed;
}

/**
 * The writer thread of the process that owns the file also commits other processes' batches,
 * which reach it on `socketPath` (event-writer-socket.ts). It starts at once and is restarted
 * if it stops, since the other processes depend on it.
 */
export type ServedWriters = { readonly socketPath: string; readonly onAppended: () => void };

/** How long a writer thread that serves others waits before it is started again. */
const RESTART_AFTER_MS = 1000;

export function threadWriter(path: string, options: EventDbOptions, serve?: ServedWriters): EventWriter {
  let writer: Thread | null = null;
  let checkpointer: Thread | null = null;
  let nextId = 0;
  let commitsSinceCheckpoint = 0;
  let checkpointing = false;
  let closing = false;
  const waiting = new Map<number, (reply: BatchReply) => void>();
  let listening: Promise<void> = Promise.resolve();

  const startWriter = (): Thread => {
    const thread = startThread(
      'writer',
      path,
      options,
      (err) => {
        if (writer !== thread) return;
        writer = null;
        for (const done of waiting.values()) done({ failure: toFailure(err) });
        waiting.clear();
        if (serve && !closing) setTimeout(() => void (closing || writer || (writer = startWriter())), RESTART_AFTER_MS).unref();
      },
      serve?.socketPath,
    );
    if (serve) listening = listeningOn(thread.worker, serve);
    thread.worker.on('message', (message: { id: number; reply: BatchReply } | { remoteAppended: true }) => {
      if (!('id' in message)) return;
      const { id, reply } = message;
      const done = waiting.get(id);
      waiting.delete(id);
      if (waiting.size === 0) thread.worker.unref();
      if ('outcomes' in reply) commitsSinceCheckpoint += 1;
      done?.(reply);
      checkpointIfDue();
    });
    return thread;
  };

  const checkpointIfDue = () => {
    if (checkpointing || commitsSinceCheckpoint < CHECKPOINT_EVERY_COMMITS) return;
    checkpointing = true;
    commitsSinceCheckpoint = 0;
    if (!checkpointer) {
      const thread = startThread('checkpointer', path, options, () => {
        if (checkpointer === thread) checkpointer = null;
        checkpointing = false;
      });
      thread.worker.on('message', () => (checkpointing = false));
      checkpointer = thread;
    }
    checkpointer.worker.postMessage({ checkpoint: true });
  };

  if (serve) writer = startWriter();

  return {
    listening: () => listening,
    commit(batch) {
      const { worker } = (writer ??= startWriter());
      worker.ref();
      const id = nextId++;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        worker.postMessage({ id, batch });
      });
    },
    async close() {
      closing = true;
      const threads = [writer, checkpointer];
      writer = checkpointer = null;
      await Promise.all(threads.map(stopThread));
    },
  };
}

/** Resolves once the thread listens for other processes' batches; rejects when it cannot. */
function listeningOn(worker: Worker, serve: ServedWriters): Promise<void> {
  const listening = new Promise<void>((resolve, reject) => {
    worker.on('message', (message: { listening?: true; listenFailed?: FailureData; remoteAppended?: true }) => {
      if (message.remoteAppended) serve.onAppended();
      if (message.listening) resolve();
      if (message.listenFailed)
        reject(new Error(`the event store's writer cannot listen on ${serve.socketPath}: ${message.listenFailed.message}`));
    });
    worker.once('exit', () => reject(new Error("the event store's writer thread stopped before it listened")));
  });
  listening.catch(() => undefined); // read by whoever waits on it; a restart makes a new one
  return listening;
}
