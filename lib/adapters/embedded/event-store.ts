import { EventEmitter } from 'node:events';
import type { AppendResult, EventStore, Position, StoredEvent, StreamAppend, Subscription } from '../../ports/event-store';
import { configureEventDb, fromFailure, type AppendRequest, type BatchReply } from './event-batch';
import { inlineWriter, threadWriter, type EventWriter } from './event-writer';
import { guarded, openDatabase, probeWritable, storageFault, WRITE_PROBE_SCHEMA, type StoreFile } from './sqlite';

/**
 * The embedded EventStore: one SQLite file in WAL mode. `position` is the row number, which is
 * also commit order because SQLite admits one writer at a time. Other processes on the same file
 * (the admin CLI) are picked up by polling, so they are seen within `pollIntervalMs`.
 *
 * Group commit: an append resolves only once its events are fsynced (synchronous = FULL), and an
 * fsync costs far more than an insert, so appends are committed together. They queue; at the end
 * of the event loop's I/O phase the queue goes to the writer as one BEGIN IMMEDIATE … COMMIT, and
 * what is appended while that batch is being written (new requests, and the follow-up appends of
 * requests the batch resolved) forms the next one. Each append still checks its own expected
 * revision, against the stream as the earlier appends of its batch have left it.
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

/** Since the store was opened: how well concurrent appends are committed together. */
export type GroupCommitStats = { readonly appends: number; readonly commits: number; readonly largestBatch: number };

export interface SqliteEventStore extends EventStore {
  /** Always here: the sequence goes to the writer in one group commit. */
  appendInOrder(appends: readonly StreamAppend[]): Promise<AppendResult[]>;
  /** Per-consumer-group checkpoints of the embedded event log, kept beside the events. */
  loadCheckpoint(group: string): number | null;
  saveCheckpoint(group: string, position: number): void;
  /** Position of the newest event, 0 when empty. */
  headPosition(): number;
  /** Resolves when an event is appended in this process, or after `ms` (other processes). */
  waitForAppend(ms: number): Promise<void>;
  /** For /readyz: rejects with `unavailable` when the file cannot take a write (read-only, I/O error, disk full). */
  probeWritable(): Promise<void>;
  stats(): GroupCommitStats;
}

export type SqliteEventStoreOptions = {
  path: string;
  pollIntervalMs?: number;
  now?: () => Date;
  /** Opens the file read-only: tools that only read, and tests of a store that cannot be written. */
  readonly?: boolean;
  /** Caps the file at this many pages (PRAGMA max_page_count); a write beyond fails as on a full disk. */
  maxPageCount?: number;
  /** Most appends in one transaction. */
  maxBatch?: number;
  /** `thread` (default for a file) commits on a writer thread; `inline` on the event loop's thread. */
  writer?: 'thread' | 'inline';
};

type PendingAppend = {
  readonly request: AppendRequest;
  /** null: skipped, its predecessor in an `appendInOrder` sequence was not appended. */
  readonly resolve: (result: AppendResult | null) => void;
  readonly reject: (err: unknown) => void;
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

export const EVENTS_REMEDY =
  'it is the source of truth and cannot be rebuilt: stop every service, move it away and restore it from a backup';

export function createSqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  const file: StoreFile = {
    name: 'event store',
    path: options.path,
    remedy: EVENTS_REMEDY,
  };
  const db = openDatabase(file, options, (opened) => {
    if (options.readonly) return;
    configureEventDb(opened, options);
    opened.exec(SCHEMA);
  });
  const pollIntervalMs = options.pollIntervalMs ?? 100;
  const now = options.now ?? (() => new Date());
  const maxBatch = options.maxBatch ?? 500;
  const onThread = (options.writer ?? 'thread') === 'thread' && !db.memory && !options.readonly;
  const writer: EventWriter = onThread ? threadWriter(options.path, options) : inlineWriter(db);
  const appended = new EventEmitter();
  appended.setMaxListeners(0);
  const counts = { appends: 0, commits: 0, largestBatch: 0 };

  const selectStream = db.prepare<[string, number], Row>('SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision');
  const selectAll = db.prepare<[number, number], Row>('SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?');
  const selectHead = db.prepare<[], { p: number | null }>('SELECT MAX(position) AS p FROM events');
  const selectCheckpoint = db.prepare<[string], { position: number }>('SELECT position FROM log_checkpoints WHERE group_id = ?');
  const upsertCheckpoint = db.prepare(
    'INSERT INTO log_checkpoints (group_id, position) VALUES (?, ?) ON CONFLICT (group_id) DO UPDATE SET position = excluded.position',
  );

  const queue: PendingAppend[] = [];
  let writing: Promise<void> | null = null;
  let flushScheduled = false;
  let closed = false;

  const scheduleFlush = () => {
    if (flushScheduled) return;
    flushScheduled = true;
    // setImmediate, not a microtask: the flush waits for the rest of this I/O phase, so the
    // appends of every request whose data arrived in it join the same commit.
    setImmediate(flush);
  };

  /** Starts the next batch unless one is being written (its end starts the next). */
  function flush(): Promise<void> | null {
    flushScheduled = false;
    if (writing || queue.length === 0) return writing;
    // A sequence of appendInOrder is never cut in two: its order holds within one commit.
    let size = Math.min(maxBatch, queue.length);
    while (size < queue.length && queue[size].request.afterPrevious) size += 1;
    const batch = queue.splice(0, size);
    writing = writer
      .commit(batch.map((p) => p.request))
      .then((reply) => settle(batch, reply))
      .finally(() => {
        writing = null;
        if (queue.length > 0) scheduleFlush();
      });
    return writing;
  }

  function settle(batch: readonly PendingAppend[], reply: BatchReply) {
    if ('failure' in reply) {
      const err = fromFailure(reply.failure);
      const fault = storageFault(file, err) ?? err;
      for (const p of batch) p.reject(fault);
      return;
    }
    counts.commits += 1;
    counts.appends += batch.length;
    counts.largestBatch = Math.max(counts.largestBatch, batch.length);
    reply.outcomes.forEach((o, i) =>
      'result' in o ? batch[i].resolve(o.result) : 'skipped' in o ? batch[i].resolve(null) : batch[i].reject(fromFailure(o.failure)),
    );
    if (reply.outcomes.some((o) => 'result' in o && o.result.ok)) appended.emit('append');
  }

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

  function enqueue(append: StreamAppend, afterPrevious: boolean): Promise<AppendResult | null> {
    const { streamId, events, expected } = append;
    if (events.length === 0) return Promise.reject(new Error('append needs at least one event'));
    if (closed) return Promise.reject(new Error('the event store is closed'));
    return new Promise<AppendResult | null>((resolve, reject) => {
      // Serialized now: the batch holds a snapshot of what was asked, ready to cross to the writer.
      const request: AppendRequest = {
        streamId,
        expected,
        createdAt: now().toISOString(),
        events: events.map((e) => ({ id: e.id, type: e.type, data: JSON.stringify(e.data), metadata: JSON.stringify(e.metadata) })),
        ...(afterPrevious ? { afterPrevious: true as const } : {}),
      };
      queue.push({ request, resolve, reject });
      scheduleFlush();
    });
  }

  function subscribeAll(after: Position | null, handler: (event: StoredEvent) => Promise<void>): Subscription {
    let stopped = false;
    let cursor = parsePosition(after);
    const loop = (async () => {
      while (!stopped) {
        let batch: Row[];
        try {
          batch = guarded(file, () => selectAll.all(cursor, 256));
        } catch {
          // Storage fault (busy, I/O, disk): /readyz reports it; the follower waits and reads again.
          await waitForAppend(1000);
          continue;
        }
        for (const row of batch) {
          if (stopped) return;
          await handler(toStored(row));
          cursor = row.position;
        }
        if (batch.length === 0) await waitForAppend(pollIntervalMs);
      }
    })();
    // A handler that throws ends the subscription (the port's rule), never the process.
    loop.catch(() => undefined);
    return {
      async close() {
        stopped = true;
        appended.emit('append');
        await loop.catch(() => undefined);
      },
    };
  }

  return {
    append(streamId, events, expected) {
      return enqueue({ streamId, events, expected }, false) as Promise<AppendResult>;
    },
    async appendInOrder(appends) {
      // Queued together, so they are committed in one batch, each made only after the one before it.
      const settled = await Promise.all(appends.map((a, i) => enqueue(a, i > 0)));
      const made: AppendResult[] = [];
      for (const result of settled) {
        if (result === null) break;
        made.push(result);
        if (!result.ok) break;
      }
      return made;
    },
    async readStream(streamId, options) {
      return guarded(file, () => selectStream.all(streamId, options?.fromRevision ?? 0)).map(toStored);
    },
    async readAll(after, limit) {
      return guarded(file, () => selectAll.all(parsePosition(after), limit)).map(toStored);
    },
    subscribeAll,
    loadCheckpoint: (group) => guarded(file, () => selectCheckpoint.get(group)?.position ?? null),
    saveCheckpoint: (group, position) => void guarded(file, () => upsertCheckpoint.run(group, position)),
    headPosition: () => guarded(file, () => selectHead.get()?.p ?? 0),
    waitForAppend,
    async probeWritable() {
      probeWritable(file, db, now);
    },
    stats: () => ({ ...counts }),
    async close() {
      if (closed) return;
      closed = true;
      // Appends already accepted are committed, not dropped.
      while (writing || queue.length > 0) await flush();
      await writer.close();
      appended.emit('append');
      db.close();
    },
  };
}
