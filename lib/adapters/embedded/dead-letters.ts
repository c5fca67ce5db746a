import { randomUUID } from 'node:crypto';
import type { DeadLetter, DeadLetterStatus, DeadLetterStore, NewDeadLetter } from '../../ports/dead-letters';
import { configureEventDb } from './event-batch';
import { EVENTS_REMEDY } from './event-store';
import { guardMethods, openDatabase, type StoreFile } from './sqlite';

/**
 * The embedded DeadLetterStore: a table in the events file, beside the events it refers to and
 * the log's checkpoints, so dead letters survive a rebuild of the read models. It opens its own
 * connection (WAL lets several connections and processes share the file).
 */

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS dead_letters (
    id               TEXT PRIMARY KEY,
    source           TEXT NOT NULL,
    event_key        TEXT NOT NULL,
    event_id         TEXT,
    event_type       TEXT,
    stream_id        TEXT,
    position         TEXT,
    reason           TEXT NOT NULL,
    attempts         INTEGER NOT NULL,
    payload          TEXT NOT NULL,
    payload_encoding TEXT NOT NULL,
    status           TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    UNIQUE (source, event_key)
  );
`;

type Row = Omit<DeadLetter, 'status' | 'payload_encoding'> & { status: string; payload_encoding: string; event_key: string };

const toLetter = ({ event_key: _k, ...row }: Row): DeadLetter => ({
  ...row,
  status: row.status as DeadLetterStatus,
  payload_encoding: row.payload_encoding as DeadLetter['payload_encoding'],
});

export function createSqliteDeadLetterStore(options: { path: string; now?: () => Date }): DeadLetterStore & { close(): void } {
  // The events file's own settings (checkpoint threshold included) and its fault mapping.
  const file: StoreFile = { name: 'event store', path: options.path, remedy: EVENTS_REMEDY };
  const db = openDatabase(file, {}, (d) => {
    configureEventDb(d, {});
    d.exec(SCHEMA);
  });
  const now = () => (options.now ?? (() => new Date()))().toISOString();

  const upsert = db.prepare(`
    INSERT INTO dead_letters (id, source, event_key, event_id, event_type, stream_id, position, reason, attempts, payload,
                              payload_encoding, status, created_at, updated_at)
    VALUES (@id, @source, @event_key, @event_id, @event_type, @stream_id, @position, @reason, @attempts, @payload,
            @payload_encoding, 'dead', @at, @at)
    ON CONFLICT (source, event_key) DO UPDATE SET reason = excluded.reason, attempts = attempts + excluded.attempts,
      status = 'dead', updated_at = excluded.updated_at`);
  const byKey = db.prepare<[string, string], Row>('SELECT * FROM dead_letters WHERE source = ? AND event_key = ?');
  const byId = db.prepare<[string], Row>('SELECT * FROM dead_letters WHERE id = ?');
  const setStatus = db.prepare<[string, string, string, string]>(
    'UPDATE dead_letters SET status = ?, reason = ?, updated_at = ? WHERE id = ?',
  );
  const setRetry = db.prepare<[string, string]>("UPDATE dead_letters SET status = 'retry', updated_at = ? WHERE id = ?");
  const del = db.prepare<[string]>('DELETE FROM dead_letters WHERE id = ?');
  const due = db.prepare<[string, number], Row>(
    "SELECT * FROM dead_letters WHERE source = ? AND status = 'retry' ORDER BY updated_at, id LIMIT ?",
  );
  const dead = db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM dead_letters WHERE status = 'dead'");

  return guardMethods(file, {
    async put(letter: NewDeadLetter) {
      // An undecodable message has no event id: its position identifies it instead.
      const eventKey = letter.event_id ?? `@${letter.position ?? randomUUID()}`;
      upsert.run({ ...letter, id: randomUUID(), event_key: eventKey, at: now() });
      return toLetter(byKey.get(letter.source, eventKey)!);
    },
    async list(filter = {}) {
      const where: string[] = [];
      const params: string[] = [];
      for (const field of ['source', 'status'] as const) {
        const v = filter[field];
        if (v === undefined) continue;
        where.push(`${field} = ?`);
        params.push(v);
      }
      const sql = `SELECT * FROM dead_letters ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id`;
      return db
        .prepare<string[], Row>(sql)
        .all(...params)
        .map(toLetter);
    },
    async get(id) {
      const row = byId.get(id);
      return row ? toLetter(row) : null;
    },
    async markRetry(id) {
      return setRetry.run(now(), id).changes > 0;
    },
    async remove(id) {
      return del.run(id).changes > 0;
    },
    async dueRetries(source, limit) {
      return due.all(source, limit).map(toLetter);
    },
    async markDead(id, reason) {
      setStatus.run('dead', reason, now(), id);
    },
    async count() {
      return dead.get()?.n ?? 0;
    },
    close: () => db.close(),
  });
}
