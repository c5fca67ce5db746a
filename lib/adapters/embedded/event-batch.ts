import type Database from 'better-sqlite3';
import type { AppendResult, ExpectedRevision } from '../../ports/event-store';

/**
 * One group commit of the embedded event store: a batch of appends in one BEGIN IMMEDIATE …
 * COMMIT. Runs wherever the writing connection lives (the writer thread, or inline for an
 * in-memory store), so everything it takes and returns is plain data that crosses threads.
 */

/**
 * An append as the writer gets it: payloads already serialized, so it is a snapshot of what was
 * asked. It carries no time: the writer stamps each event with the time its batch is written
 * (`createdAt`, see `createBatchCommitter`).
 */
export type AppendRequest = {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  readonly events: readonly { readonly id: string; readonly type: string; readonly data: string; readonly metadata: string }[];
  /** Part of an `appendInOrder` sequence: made only when the request just before it in the batch was appended. */
  readonly afterPrevious?: true;
  /**
   * Part of an `appendAll` sequence (each of its requests; the first has no `afterPrevious`): the
   * sequence is made whole or not at all.
   */
  readonly whole?: true;
};

/** What made an append or a batch fail, as plain data; `code` is SQLite's when it is SQLite's. */
export type FailureData = { readonly message: string; readonly code?: string };

/** `skipped`: an `afterPrevious` request whose predecessor was not appended, or a request of a whole sequence undone. */
export type AppendOutcome = { readonly result: AppendResult } | { readonly failure: FailureData } | { readonly skipped: true };

export type BatchReply = { readonly outcomes: readonly AppendOutcome[] } | { readonly failure: FailureData };

export const toFailure = (err: unknown): FailureData => {
  const code = (err as { code?: unknown } | null)?.code;
  return { message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}) };
};

export const fromFailure = (f: FailureData): Error => Object.assign(new Error(f.message), f.code ? { code: f.code } : {});

/**
 * Errors after which the transaction cannot go on (SQLite may already have rolled it back):
 * the whole batch fails. Anything else (a duplicate event id) is the one append's own.
 */
const DOOMS_BATCH = /^SQLITE_(READONLY|FULL|IOERR|CORRUPT|NOTADB|CANTOPEN|BUSY|LOCKED|NOMEM|INTERRUPT)/;

export type EventDbOptions = { readonly maxPageCount?: number };

/**
 * WAL frames (pages) after which a committing connection checkpoints. The checkpointer thread
 * (event-writer.ts) copies the WAL into the file beside the writer long before; this is the
 * backstop for when it cannot, and then finds most frames already copied. At SQLite's default
 * (1000) every sixteenth or so commit of a busy store stopped to checkpoint for 10–20 ms.
 */
const CHECKPOINT_BACKSTOP_PAGES = 10_000;

/** The pragmas of every connection to the events file (the writer thread opens its own). */
export function configureEventDb(db: Database.Database, options: EventDbOptions): void {
  db.pragma('journal_mode = WAL');
  // FULL: an acknowledged append survives power loss, not just kill -9.
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.pragma(`wal_autocheckpoint = ${CHECKPOINT_BACKSTOP_PAGES}`);
  if (options.maxPageCount) db.pragma(`max_page_count = ${Math.floor(options.maxPageCount)}`);
}

export function createBatchCommitter(db: Database.Database): (batch: readonly AppendRequest[]) => BatchReply {
  const lastRevision = db.prepare<[string], { r: number | null }>('SELECT MAX(revision) AS r FROM events WHERE stream_id = ?');
  const insert = db.prepare('INSERT INTO events (id, stream_id, revision, type, data, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)');

  // The time of the batch being written, which its events carry (`createdAt`): when they were
  // appended, as EventStoreDB stamps its events on its server, not when a process asked. An append
  // waits for the commit in flight before its own; stamped when asked, that wait counted as
  // projection lag (the projection_lag_seconds histogram measures from `createdAt`).
  let createdAt = '';
  // Each append checks its expected revision against the stream as the batch has left it so
  // far: of two appends expecting the same revision, the second sees the first's events.
  const appendOne = (request: AppendRequest): AppendResult => {
    const { streamId, expected, events } = request;
    const current = lastRevision.get(streamId)?.r ?? null;
    const actual = current === null ? ('no_stream' as const) : current;
    const matches = expected === 'any' || (expected === 'no_stream' ? current === null : current === expected);
    if (!matches) return { ok: false, conflict: { expected, actual } };
    let revision = current ?? -1;
    let position = 0;
    for (const e of events) {
      revision += 1;
      position = Number(insert.run(e.id, streamId, revision, e.type, e.data, e.metadata, createdAt).lastInsertRowid);
    }
    return { ok: true, nextRevision: revision, position: String(position) };
  };
  // Inside the batch's transaction better-sqlite3 runs this as a SAVEPOINT, so a failing append
  // of several events is undone alone. A single INSERT is atomic by itself and skips the cost.
  const appendSeveral = db.transaction(appendOne);

  // A whole sequence in a SAVEPOINT of its own (a transaction inside the batch's): a conflict
  // throws, which undoes what the sequence appended before it.
  const appendWhole = db.transaction((requests: readonly AppendRequest[]) =>
    requests.map((request, index) => {
      const result = appendOne(request);
      if (!result.ok) throw new Undone(index, result);
      return result;
    }),
  );
  const wholeOutcomes = (requests: readonly AppendRequest[]): AppendOutcome[] => {
    try {
      return appendWhole(requests).map((result) => ({ result }));
    } catch (err) {
      if (err instanceof Undone) return requests.map((_, k) => (k === err.index ? { result: err.result } : { skipped: true as const }));
      if (DOOMS_BATCH.test(toFailure(err).code ?? '')) throw err;
      const failure = toFailure(err);
      return requests.map(() => ({ failure }));
    }
  };

  const appended = (o: AppendOutcome | undefined) => o !== undefined && 'result' in o && o.result.ok;
  const commit = db.transaction((batch: readonly AppendRequest[]): AppendOutcome[] => {
    createdAt = new Date().toISOString();
    const outcomes: AppendOutcome[] = [];
    for (let i = 0; i < batch.length; i++) {
      const request = batch[i];
      if (request.whole && !request.afterPrevious) {
        let end = i + 1;
        while (end < batch.length && batch[end].whole && batch[end].afterPrevious) end++;
        outcomes.push(...wholeOutcomes(batch.slice(i, end)));
        i = end - 1;
        continue;
      }
      if (request.afterPrevious && !appended(outcomes[outcomes.length - 1])) {
        outcomes.push({ skipped: true });
        continue;
      }
      try {
        outcomes.push({ result: request.events.length === 1 ? appendOne(request) : appendSeveral(request) });
      } catch (err) {
        if (DOOMS_BATCH.test(toFailure(err).code ?? '')) throw err;
        outcomes.push({ failure: toFailure(err) });
      }
    }
    return outcomes;
  });

  return (batch) => {
    try {
      return { outcomes: commit.immediate(batch) };
    } catch (err) {
      return { failure: toFailure(err) };
    }
  };
}

/** A whole sequence's conflict, thrown to undo its SAVEPOINT: which request, and its result. */
class Undone extends Error {
  constructor(
    readonly index: number,
    readonly result: AppendResult,
  ) {
    super('a whole sequence conflicted');
  }
}
