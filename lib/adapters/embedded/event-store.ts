import { EventEmitter } from 'node:events';
import type { AllOrNothing, AppendResult, EventStore, Position, StoredEvent, StreamAppend, Subscription } from '../../ports/event-store';
import type Database from 'better-sqlite3';
import { inlineWriter, threadWriter, type EventWriter } from './event-writer';
import { socketWriter } from './event-writer-socket';
import { openEventDb, prepareStatements, toStored, type Row, type Statements } from './event-tables';
import { createGroupCommit, type GroupCommitStats } from './group-commit';
import { guarded, probeWritable, type StoreFile } from './sqlite';

export type { GroupCommitStats } from './group-commit';

/**
 * The embedded EventStore: one SQLite file in WAL mode. `position` is the row number, which is
 * also commit order because SQLite admits one writer at a time. Other processes on the same file
 * (the admin CLI) are picked up by polling, so they are seen within `pollIntervalMs`.
 *
 * Durability: an append resolves only once its events are fsynced (synchronous = FULL). Appends
 * made together share one transaction and one fsync (group commit, group-commit.ts), each still
 * checked against its own expected revision; a conflict is a result, not an error.
 */

export interface SqliteEventStore extends EventStore {
  /** Always here: the sequence goes to the writer in one group commit. */
  appendInOrder(appends: readonly StreamAppend[]): Promise<AppendResult[]>;
  appendAll(appends: readonly StreamAppend[]): Promise<AllOrNothing>;
  /** Per-consumer-group checkpoints of the embedded event log, kept beside the events. */
  loadCheckpoint(group: string): number | null;
  saveCheckpoint(group: string, position: number): void;
  /** Position of the newest event, 0 when empty. */
  headPosition(): number;
  /** Resolves when an event is appended in this process, or after `ms` (other processes). */
  waitForAppend(ms: number): Promise<void>;
  /** Another process says it appended: whoever waits for an append reads now, not at the next poll. */
  appendedElsewhere(): void;
  /** Resolves once the writer takes other processes' batches (with `serveWriters`; at once without). */
  writersListening(): Promise<void>;
  /** For /readyz: rejects with `unavailable` when the file cannot take a write (read-only, I/O error, disk full). */
  probeWritable(): Promise<void>;
  stats(): GroupCommitStats;
}

export type SqliteEventStoreOptions = {
  path: string;
  pollIntervalMs?: number;
  /** The clock of the readiness probe's writes. Events carry the writer's time (event-batch.ts). */
  now?: () => Date;
  /** Opens the file read-only: tools that only read, and tests of a store that cannot be written. */
  readonly?: boolean;
  /** Caps the file at this many pages (PRAGMA max_page_count); a write beyond fails as on a full disk. */
  maxPageCount?: number;
  /** Most appends in one transaction. */
  maxBatch?: number;
  /** `thread` (default for a file) commits on a writer thread; `inline` on the event loop's thread. */
  writer?: 'thread' | 'inline';
  /**
   * This store's writer thread is the file's one writer: it also commits what other processes
   * send to this Unix socket. `onAppended` is told when one of their batches appended events.
   */
  serveWriters?: { readonly socketPath: string; readonly onAppended?: () => void };
  /** Appends and checkpoints go to the writer listening on this Unix socket (another process's `serveWriters`). */
  writerSocket?: string;
};

const parsePosition = (p: Position | null): number => (p === null ? 0 : Number(p));

export const EVENTS_REMEDY =
  'it is the source of truth and cannot be rebuilt: stop every service, move it away and restore it from a backup';

export function createSqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  const file: StoreFile = { name: 'event store', path: options.path, remedy: EVENTS_REMEDY };
  const db = openEventDb(file, options);
  const statements = prepareStatements(db);
  const now = options.now ?? (() => new Date());
  const pollIntervalMs = options.pollIntervalMs ?? 100;
  const appended = appendSignal();
  // A file's batches are committed on a writer thread, so inserts and fsync never block the event
  // loop; an in-memory database (which no other connection can see) and a read-only one commit inline.
  const onThread = (options.writer ?? 'thread') === 'thread' && !db.memory && !options.readonly;
  const writer = openWriter(options, db, onThread, appended.notify);
  // This connection then writes only consumer checkpoints (every 200 ms per group) and the
  // readiness probe: a checkpoint lost to a power cut only redelivers what handlers take as
  // duplicates, so it is not worth an fsync on the event loop (measured at 5 ms per import in the
  // worker under load). Events keep synchronous = FULL on the writer's own connection.
  if (onThread) db.pragma('synchronous = NORMAL');
  const commits = createGroupCommit(file, writer, options.maxBatch ?? 500, appended.notify);
  let closed = false;

  /** Serialized now: the batch holds a snapshot of what was asked, ready to cross to the writer thread. */
  async function enqueue(
    { streamId, events, expected }: StreamAppend,
    afterPrevious: boolean,
    whole = false,
  ): Promise<AppendResult | null> {
    if (events.length === 0) throw new Error('append needs at least one event');
    if (closed) throw new Error('the event store is closed');
    return commits.submit({
      streamId,
      expected,
      events: events.map((e) => ({ id: e.id, type: e.type, data: JSON.stringify(e.data), metadata: JSON.stringify(e.metadata) })),
      ...(afterPrevious ? { afterPrevious: true as const } : {}),
      ...(whole ? { whole: true as const } : {}),
    });
  }

  return {
    append: (streamId, events, expected) => enqueue({ streamId, events, expected }, false) as Promise<AppendResult>,
    // Queued together, so they are committed in one batch, each made only after the one before it.
    appendInOrder: async (appends) => madeInOrder(await Promise.all(appends.map((a, i) => enqueue(a, i > 0)))),
    // Queued together as one sequence, committed in one SAVEPOINT of one batch.
    appendAll: async (appends) => allOrNothing(await Promise.all(appends.map((a, i) => enqueue(a, i > 0, true)))),
    ...reads(file, statements),
    subscribeAll: (after, handler) => followAll(file, statements, appended, parsePosition(after), pollIntervalMs, handler),
    ...checkpoints(file, statements, writer),
    writersListening: () => writer.listening?.() ?? Promise.resolve(),
    waitForAppend: appended.wait,
    appendedElsewhere: appended.notify,
    probeWritable: async () => probeWritable(file, db, now),
    stats: commits.stats,
    async close() {
      if (closed) return;
      closed = true;
      // Appends already accepted are committed, not dropped.
      await commits.drain();
      await writer.close();
      appended.notify();
      db.close();
    },
  };
}

/** An `appendAll` sequence's outcome from its requests' results: all made, or the conflict that undid them (the others null). */
function allOrNothing(settled: readonly (AppendResult | null)[]): AllOrNothing {
  const index = settled.findIndex((r) => r !== null && !r.ok);
  if (index !== -1) return { ok: false, index, conflict: (settled[index] as Extract<AppendResult, { ok: false }>).conflict };
  const results = settled.filter((r): r is Extract<AppendResult, { ok: true }> => r !== null && r.ok);
  if (results.length !== settled.length) throw new Error('a whole sequence was neither made nor undone');
  return { ok: true, results };
}

/**
 * The results of an `appendInOrder` sequence up to and including its first conflict: the writer
 * skipped (null) whatever followed it, so no append is made without the ones before it.
 */
function madeInOrder(settled: readonly (AppendResult | null)[]): AppendResult[] {
  const made: AppendResult[] = [];
  for (const result of settled) {
    if (result === null) break;
    made.push(result);
    if (!result.ok) break;
  }
  return made;
}

/** Reads run on the store's own connection: WAL lets them run beside the writer thread. */
function reads(file: StoreFile, s: Statements): Pick<SqliteEventStore, 'readStream' | 'readAll' | 'headPosition'> {
  return {
    async readStream(streamId, options) {
      return guarded(file, () => s.stream.all(streamId, options?.fromRevision ?? 0)).map(toStored);
    },
    async readAll(after, limit) {
      return guarded(file, () => s.after.all(parsePosition(after), limit)).map(toStored);
    },
    headPosition: () => guarded(file, () => s.head.get()?.p ?? 0),
  };
}

/**
 * Where batches are committed: the file's one writer in another process (over its socket), a
 * writer thread of this process (which may be that one writer), or this connection.
 */
function openWriter(options: SqliteEventStoreOptions, db: Database.Database, onThread: boolean, onRemoteAppend: () => void): EventWriter {
  if (options.writerSocket && !options.readonly) return socketWriter(options.writerSocket);
  if (!onThread) return inlineWriter(db);
  const served = options.serveWriters;
  const onAppended = () => (onRemoteAppend(), served?.onAppended?.());
  // Only plain data crosses to the thread.
  const dbOptions = { maxPageCount: options.maxPageCount };
  return threadWriter(options.path, dbOptions, served ? { socketPath: served.socketPath, onAppended } : undefined);
}

/**
 * The embedded log's per-group checkpoints: positions in this file's `$all`, kept in the same
 * file. Saved by the file's one writer when it is in another process, so this process never
 * waits for the file's lock.
 */
function checkpoints(file: StoreFile, s: Statements, writer: EventWriter): Pick<SqliteEventStore, 'loadCheckpoint' | 'saveCheckpoint'> {
  return {
    loadCheckpoint: (group) => guarded(file, () => s.checkpoint.get(group)?.position ?? null),
    saveCheckpoint: writer.saveCheckpoint
      ? (group, position) => writer.saveCheckpoint!(group, position)
      : (group, position) => void guarded(file, () => s.saveCheckpoint.run(group, position)),
  };
}

type AppendSignal = { notify(): void; wait(ms: number): Promise<void> };

/** Wakes whoever waits for an append made in this process; another process's appends are seen by polling. */
function appendSignal(): AppendSignal {
  const appended = new EventEmitter();
  appended.setMaxListeners(0);
  return {
    notify: () => void appended.emit('append'),
    wait: (ms) =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          appended.off('append', done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        appended.once('append', done);
      }),
  };
}

/**
 * The live `$all` follow: pages after the cursor, each event handed over only once the one before
 * it was handled; when caught up it waits for an append here, or `pollIntervalMs` for another
 * process's.
 */
function followAll(
  file: StoreFile,
  s: Statements,
  appended: AppendSignal,
  after: number,
  pollIntervalMs: number,
  handler: (event: StoredEvent) => Promise<void>,
): Subscription {
  let stopped = false;
  let cursor = after;
  const loop = (async () => {
    while (!stopped) {
      let batch: Row[];
      try {
        batch = guarded(file, () => s.after.all(cursor, 256));
      } catch {
        // Storage fault (busy, I/O, disk): /readyz reports it; the follower waits and reads again.
        await appended.wait(1000);
        continue;
      }
      for (const row of batch) {
        if (stopped) return;
        await handler(toStored(row));
        cursor = row.position;
      }
      if (batch.length === 0) await appended.wait(pollIntervalMs);
    }
  })();
  // A handler that throws ends the subscription (the port's rule), never the process.
  loop.catch(() => undefined);
  return {
    async close() {
      stopped = true;
      appended.notify();
      await loop.catch(() => undefined);
    },
  };
}
