import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { configureEventDb, createBatchCommitter, toFailure, type AppendRequest, type BatchReply, type EventDbOptions } from './event-batch';
import { serveWriters } from './event-writer-socket';
import { passiveCheckpoint } from './sqlite';

/**
 * The threads of the embedded event store (see event-writer.ts), each with its own connection:
 * the writer commits batches; the checkpointer copies the WAL into the file when told to.
 * Connections open on first use, so a failure to open is that batch's failure.
 *
 * A writer given a socket path is the one writer of its file: other processes (the workers of
 * `npm start`) send their batches and consumer checkpoints there (event-writer-socket.ts) instead
 * of opening a writer of their own. SQLite admits one writer at a time, and a connection that
 * finds the file locked sleeps in growing steps (up to 100 ms) before it tries again, so writers
 * in several processes waited on each other's fsyncs by tens of milliseconds.
 */

type Role = 'writer' | 'checkpointer';
type Message = { readonly id: number; readonly batch: readonly AppendRequest[] } | { readonly checkpoint: true } | { readonly close: true };

const { path, options, role, socketPath } = workerData as { path: string; options: EventDbOptions; role: Role; socketPath?: string };
const port = parentPort!;
let db: Database.Database | undefined;
let commit: ((batch: readonly AppendRequest[]) => BatchReply) | undefined;

function open(): Database.Database {
  const opened = new Database(path);
  try {
    configureEventDb(opened, options);
    if (role === 'writer') commit = createBatchCommitter(opened);
    return (db = opened);
  } catch (err) {
    opened.close();
    throw err;
  }
}

function checkpoint() {
  // Beside the writer, never waiting for it: the writer never waits on it either.
  passiveCheckpoint(() => db ?? open());
  port.postMessage({ checkpointed: true });
}

type Pending = { readonly batch: readonly AppendRequest[]; readonly reply: (reply: BatchReply) => void };
const pending: Pending[] = [];
let flushScheduled = false;

/**
 * Batches that arrive together (this process's and other processes') are committed in one
 * transaction: at the end of the thread's I/O phase, so whatever came in it shares one fsync.
 */
function enqueue(batch: readonly AppendRequest[], reply: (reply: BatchReply) => void) {
  pending.push({ batch, reply });
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flush);
}

function flush() {
  flushScheduled = false;
  const batches = pending.splice(0);
  const replies = commitTogether(batches.map((p) => p.batch));
  batches.forEach((p, i) => p.reply(replies[i]));
}

/**
 * One transaction for several batches, each answered with its own outcomes. A batch begins with
 * an append of its own (group-commit.ts never cuts an `appendInOrder` sequence), so putting them
 * end to end changes no append's outcome.
 */
function commitTogether(batches: readonly (readonly AppendRequest[])[]): BatchReply[] {
  let reply: BatchReply;
  try {
    if (!commit) open();
    reply = commit!(batches.length === 1 ? batches[0] : batches.flat());
  } catch (err) {
    reply = { failure: toFailure(err) };
  }
  if ('failure' in reply) return batches.map(() => reply);
  let start = 0;
  return batches.map((batch) => ({ outcomes: reply.outcomes.slice(start, (start += batch.length)) }));
}

/** Consumer checkpoints of other processes, on a connection of their own that does not fsync each. */
function checkpointSaver(): (group: string, position: number) => void {
  let save: Database.Statement<[string, number]> | undefined;
  return (group, position) => {
    if (!save) {
      const connection = new Database(path);
      configureEventDb(connection, options);
      // A checkpoint lost to a power cut only redelivers what handlers take as duplicates.
      connection.pragma('synchronous = NORMAL');
      save = connection.prepare(
        'INSERT INTO log_checkpoints (group_id, position) VALUES (?, ?) ON CONFLICT (group_id) DO UPDATE SET position = excluded.position',
      );
    }
    save.run(group, position);
  };
}

const writers =
  role === 'writer' && socketPath
    ? serveWriters(socketPath, {
        commit: (batch) => new Promise((resolve) => enqueue(batch, resolve)),
        saveCheckpoint: checkpointSaver(),
        // The main thread wakes this process's followers: another process's events are in.
        onAppended: () => port.postMessage({ remoteAppended: true }),
        onListening: () => port.postMessage({ listening: true }),
        onListenFailed: (err) => port.postMessage({ listenFailed: toFailure(err) }),
      })
    : null;

port.on('message', (message: Message) => {
  if ('close' in message) {
    void (writers?.close() ?? Promise.resolve()).then(() => {
      if (pending.length > 0) flush(); // batches other processes sent just before the close
      db?.close();
      port.close();
    });
  } else if ('checkpoint' in message) {
    checkpoint();
  } else {
    enqueue(message.batch, (reply) => port.postMessage({ id: message.id, reply }));
  }
});
