import Database from 'better-sqlite3';
import { EventEmitter } from 'node:events';
import type { AppendResult, EventStore, ExpectedRevision, NewEvent, Position, StoredEvent, Subscription } from '../../ports/event-store';

/**
 * The embedded EventStore: one SQLite file in WAL mode. `position` is the row number, which is
 * also commit order because SQLite admits one writer at a time. Other processes on the same file
 * (the admin CLI) are picked up by polling, so they are seen within `pollIntervalMs`.
 */

type Row = {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  created_at: string;
};

export interface SqliteEventStore extends EventStore {
  /** Per-consumer-group checkpoints of the embedded event log, kept beside the events. */
  loadCheckpoint(group: string): number | null;
  saveCheckpoint(group: string, position: number): void;
  /** Position of the newest event, 0 when empty. */
  headPosition(): number;
  /** Resolves when an event is appended in this process, or after `ms` (other processes). */
  waitForAppend(ms: number): Promise<void>;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    position   INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    stream_id  TEXT NOT NULL,
    revision   INTEGER NOT NULL,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    metadata   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (stream_id, revision)
  );
  CREATE TABLE IF NOT EXISTS log_checkpoints (group_id TEXT PRIMARY KEY, position INTEGER NOT NULL);
`;

const toStored = (r: Row): StoredEvent => ({
  id: r.id,
  type: r.type,
  data: JSON.parse(r.data),
  metadata: JSON.parse(r.metadata),
  streamId: r.stream_id,
  revision: r.revision,
  position: String(r.position),
  createdAt: r.created_at,
});

const parsePosition = (p: Position | null): number => (p === null ? 0 : Number(p));

export function createSqliteEventStore(options: { path: string; pollIntervalMs?: number; now?: () => Date }): SqliteEventStore {
  const db = new Database(options.path);
  db.pragma('journal_mode = WAL');
  // FULL: an acknowledged append survives power loss, not just kill -9.
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.exec(SCHEMA);
  const pollIntervalMs = options.pollIntervalMs ?? 100;
  const now = options.now ?? (() => new Date());
  const appended = new EventEmitter();
  appended.setMaxListeners(0);

  const lastRevision = db.prepare<[string], { r: number | null }>('SELECT MAX(revision) AS r FROM events WHERE stream_id = ?');
  const insert = db.prepare('INSERT INTO events (id, stream_id, revision, type, data, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const selectStream = db.prepare<[string], Row>('SELECT * FROM events WHERE stream_id = ? ORDER BY revision');
  const selectAll = db.prepare<[number, number], Row>('SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?');
  const selectHead = db.prepare<[], { p: number | null }>('SELECT MAX(position) AS p FROM events');
  const selectCheckpoint = db.prepare<[string], { position: number }>('SELECT position FROM log_checkpoints WHERE group_id = ?');
  const upsertCheckpoint = db.prepare(
    'INSERT INTO log_checkpoints (group_id, position) VALUES (?, ?) ON CONFLICT (group_id) DO UPDATE SET position = excluded.position',
  );

  const appendTx = db.transaction((streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): AppendResult => {
    const current = lastRevision.get(streamId)?.r ?? null;
    const actual = current === null ? ('no_stream' as const) : current;
    const matches = expected === 'any' || (expected === 'no_stream' ? current === null : current === expected);
    if (!matches) return { ok: false, conflict: { expected, actual } };
    let revision = current ?? -1;
    let position = 0;
    const createdAt = now().toISOString();
    for (const e of events) {
      revision += 1;
      const info = insert.run(e.id, streamId, revision, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata), createdAt);
      position = Number(info.lastInsertRowid);
    }
    return { ok: true, nextRevision: revision, position: String(position) };
  });

  const waitForAppend = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        appended.off('append', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      appended.once('append', done);
    });

  function subscribeAll(after: Position | null, handler: (event: StoredEvent) => Promise<void>): Subscription {
    let closed = false;
    let cursor = parsePosition(after);
    const loop = (async () => {
      while (!closed) {
        const batch = selectAll.all(cursor, 256);
        for (const row of batch) {
          if (closed) return;
          await handler(toStored(row));
          cursor = row.position;
        }
        if (batch.length === 0) await waitForAppend(pollIntervalMs);
      }
    })();
    return {
      async close() {
        closed = true;
        appended.emit('append');
        await loop.catch(() => undefined);
      },
    };
  }

  return {
    async append(streamId, events, expected) {
      if (events.length === 0) throw new Error('append needs at least one event');
      const result = appendTx.immediate(streamId, events, expected);
      if (result.ok) appended.emit('append');
      return result;
    },
    async readStream(streamId) {
      return selectStream.all(streamId).map(toStored);
    },
    async readAll(after, limit) {
      return selectAll.all(parsePosition(after), limit).map(toStored);
    },
    subscribeAll,
    loadCheckpoint: (group) => selectCheckpoint.get(group)?.position ?? null,
    saveCheckpoint: (group, position) => void upsertCheckpoint.run(group, position),
    headPosition: () => selectHead.get()?.p ?? 0,
    waitForAppend,
    async close() {
      appended.emit('append');
      db.close();
    },
  };
}
