import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * The thread of wal-checkpointer.ts: a connection of its own to one file, which copies the WAL
 * back into the database when told. PASSIVE never waits for readers or writers (SQLite calls no
 * busy handler for it), so the connections committing on other threads are not held up; frames
 * it cannot copy now are copied by the next one.
 */
const { path } = workerData as { path: string };
const port = parentPort!;
let db: Database.Database | undefined;

port.on('message', (message: { checkpoint: true } | { close: true }) => {
  if ('close' in message) {
    db?.close();
    port.close();
    return;
  }
  let copied = false;
  try {
    db ??= new Database(path);
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    copied = result.busy === 0;
  } catch {
    // Busy (another connection checkpoints) or a storage fault: the committing connections
    // surface faults; the next checkpoint, or their backstop, catches up.
  }
  port.postMessage({ checkpointed: copied });
});
