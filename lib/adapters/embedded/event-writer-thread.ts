import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { configureEventDb, createBatchCommitter, toFailure, type AppendRequest, type BatchReply, type EventDbOptions } from './event-batch';

/**
 * The threads of the embedded event store (see event-writer.ts), each with its own connection:
 * the writer commits one batch at a time; the checkpointer copies the WAL into the file when
 * told to. Connections open on first use, so a failure to open is that batch's failure.
 */

type Role = 'writer' | 'checkpointer';
type Message = { readonly id: number; readonly batch: readonly AppendRequest[] } | { readonly checkpoint: true } | { readonly close: true };

const { path, options, role } = workerData as { path: string; options: EventDbOptions; role: Role };
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
  try {
    // PASSIVE copies what it can without waiting for the writer or readers: the writer never
    // waits on it. It fails fast when another process is checkpointing; the next one catches up.
    (db ?? open()).pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // A checkpoint that cannot run now is retried at the next one, and the writer's backstop
    // still bounds the WAL; a file that cannot be written fails the writer's commits, loudly.
  }
  port.postMessage({ checkpointed: true });
}

port.on('message', (message: Message) => {
  if ('close' in message) {
    db?.close();
    port.close();
  } else if ('checkpoint' in message) {
    checkpoint();
  } else {
    let reply: BatchReply;
    try {
      if (!commit) open();
      reply = commit!(message.batch);
    } catch (err) {
      reply = { failure: toFailure(err) };
    }
    port.postMessage({ id: message.id, reply });
  }
});
