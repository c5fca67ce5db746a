import type Database from 'better-sqlite3';
import type { StoredEvent } from '../../ports/event-store';
import { configureEventDb, type EventDbOptions } from './event-batch';
import { openDatabase, WRITE_PROBE_SCHEMA, type StoreFile } from './sqlite';

/**
 * The events file's tables, and the statements the store reads and keeps checkpoints with. Events
 * are inserted by the group commit's writer (event-batch.ts); `log_checkpoints` holds the embedded
 * log's per-group positions, in the same file as the events they point into.
 */

export type Row = {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  created_at: string;
};

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
  ${WRITE_PROBE_SCHEMA};
`;

export const toStored = (r: Row): StoredEvent => ({
  id: r.id,
  type: r.type,
  data: JSON.parse(r.data),
  metadata: JSON.parse(r.metadata),
  streamId: r.stream_id,
  revision: r.revision,
  position: String(r.position),
  createdAt: r.created_at,
});

/** Pragmas and tables; a read-only connection can set up nothing and takes the file as it is. */
export function openEventDb(file: StoreFile, options: EventDbOptions & { readonly?: boolean }): Database.Database {
  return openDatabase(file, options, (opened) => {
    if (options.readonly) return;
    configureEventDb(opened, options);
    opened.exec(SCHEMA);
  });
}

export function prepareStatements(db: Database.Database) {
  return {
    stream: db.prepare<[string, number], Row>('SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision'),
    after: db.prepare<[number, number], Row>('SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?'),
    head: db.prepare<[], { p: number | null }>('SELECT MAX(position) AS p FROM events'),
    checkpoint: db.prepare<[string], { position: number }>('SELECT position FROM log_checkpoints WHERE group_id = ?'),
    saveCheckpoint: db.prepare(
      'INSERT INTO log_checkpoints (group_id, position) VALUES (?, ?) ON CONFLICT (group_id) DO UPDATE SET position = excluded.position',
    ),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
