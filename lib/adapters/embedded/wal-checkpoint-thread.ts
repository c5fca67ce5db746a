import Database from 'better-sqlite3';
import { parentPort } from 'node:worker_threads';
import { passiveCheckpoint } from './sqlite';

/**
 * The thread of wal-checkpointer.ts: a connection of its own for each store it is told of, which
 * copies that file's WAL back into the database when told. PASSIVE never waits for readers or
 * writers (SQLite calls no busy handler for it), so the connections committing on other threads
 * are not held up; frames it cannot copy now are copied by the next one.
 */
const port = parentPort!;
/** A connection per store that asked (`user`): two stores of one file in a process close apart. */
const connections = new Map<number, Database.Database>();

port.on('message', (message: { checkpoint: string; user: number } | { close: number } | { exit: true }) => {
  if ('exit' in message) {
    for (const db of connections.values()) db.close();
    port.close();
  } else if ('close' in message) {
    connections.get(message.close)?.close();
    connections.delete(message.close);
  } else {
    checkpoint(message.checkpoint, message.user);
    port.postMessage({ user: message.user });
  }
});

function checkpoint(path: string, user: number) {
  passiveCheckpoint(() => {
    let db = connections.get(user);
    if (!db) connections.set(user, (db = new Database(path)));
    return db;
  });
}
