import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { CacheStats } from '../../observability/metrics';
import type { CollectionWrite, Doc, Filter, FindOptions, PutOutcome, ReadQueries, ReadStore } from '../../ports/read-store';
import { guardMethods, openDatabase, probeWritable, syncWal, walAtNormal, WRITE_PROBE_SCHEMA, type StoreFile } from './sqlite';
import { leaveCheckpointsToThread, walCheckpointer, type WalCheckpointOptions } from './wal-checkpointer';

/**
 * The embedded ReadStore: one SQLite table of JSON documents in WAL mode. Filters become SQL over
 * `json_extract` with every value bound as a parameter. Field paths are validated identifiers and
 * are written into the SQL as literals, because SQLite uses an expression index only when the
 * query's expression is textually the index's. For the same reason the collection is a literal in
 * `find` and `sum`: each index is partial, over its own collection's documents only
 * (`WHERE collection = 'jobs'`), and SQLite uses a partial index only for a query whose WHERE
 * names that collection as it does.
 */

type Sql = { readonly text: string; readonly params: readonly (string | number)[] };

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS docs (
    collection TEXT NOT NULL,
    id         TEXT NOT NULL,
    rev        INTEGER NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (collection, id)
  );
  ${WRITE_PROBE_SCHEMA};
`;

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const RANGE = new Map([
  ['$gt', '>'],
  ['$gte', '>='],
  ['$lt', '<'],
  ['$lte', '<='],
]);

const sql = (text: string, ...params: (string | number)[]): Sql => ({ text, params });
const join = (parts: readonly Sql[], op: 'AND' | 'OR', empty: string): Sql =>
  parts.length === 0 ? sql(empty) : { text: `(${parts.map((p) => p.text).join(` ${op} `)})`, params: parts.flatMap((p) => p.params) };

function path(field: string): string {
  if (!FIELD.test(field)) throw new Error(`invalid field path ${JSON.stringify(field)}`);
  return `'$.${field}'`;
}
const value = (field: string) => `json_extract(doc, ${path(field)})`;
const jsonType = (field: string) => `json_type(doc, ${path(field)})`;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function sameType(field: string, operand: unknown): string | number {
  if (typeof operand === 'string') return operand;
  if (typeof operand === 'number' && Number.isFinite(operand)) return operand;
  throw new Error(`${field}: expected a string or a finite number, got ${JSON.stringify(operand)}`);
}
/** Guards on the JSON type so that 1 never equals true or '1', mirroring MongoDB's type brackets. */
const typeIs = (field: string, operand: string | number) =>
  typeof operand === 'number' ? `${jsonType(field)} IN ('integer', 'real')` : `${jsonType(field)} = 'text'`;

function equals(field: string, operand: unknown): Sql {
  // json_extract yields SQL NULL both for a JSON null and for a missing field.
  if (operand === null) return sql(`${value(field)} IS NULL`);
  if (typeof operand === 'boolean') return sql(`${jsonType(field)} = ?`, String(operand));
  const v = sameType(field, operand);
  return sql(`(${value(field)} = ? AND ${typeIs(field, v)})`, v);
}

function operator(field: string, op: string, operand: unknown): Sql {
  const comparison = RANGE.get(op);
  if (comparison) {
    const v = sameType(field, operand);
    return sql(`(${value(field)} ${comparison} ? AND ${typeIs(field, v)})`, v);
  }
  switch (op) {
    case '$ne': {
      // `IS NOT 1` rather than NOT: equality is NULL on a missing field, and missing is "not equal".
      const eq = equals(field, operand);
      return { text: `(${eq.text}) IS NOT 1`, params: eq.params };
    }
    case '$in':
      if (!Array.isArray(operand)) throw new Error(`${field}: $in expects an array`);
      // Strings only (the common case: states, types): one IN list, which an index on the field
      // can seek value by value; an OR of equalities was filtered only after the index's earlier fields.
      if (operand.length > 0 && operand.every((o) => typeof o === 'string')) {
        return sql(`(${value(field)} IN (${operand.map(() => '?').join(', ')}) AND ${jsonType(field)} = 'text')`, ...(operand as string[]));
      }
      return join(
        operand.map((o) => equals(field, o)),
        'OR',
        '0',
      );
    case '$contains':
      if (typeof operand !== 'string') throw new Error(`${field}: $contains expects a string`);
      return sql(`(${jsonType(field)} = 'text' AND contains_ci(${value(field)}, ?))`, operand);
    default:
      throw new Error(`${field}: unknown operator ${JSON.stringify(op)}`);
  }
}

function conditions(field: string, condition: unknown): Sql[] {
  if (!isObject(condition)) return [equals(field, condition)];
  // An operator given as undefined is absent, so optional bounds pass straight through.
  return Object.entries(condition)
    .filter(([, operand]) => operand !== undefined)
    .map(([op, operand]) => operator(field, op, operand));
}

function where(filter: unknown): Sql {
  if (!isObject(filter)) throw new Error('a filter must be an object');
  const parts = Object.entries(filter).flatMap(([key, condition]) => (key === '$or' ? [anyOf(condition)] : conditions(key, condition)));
  return join(parts, 'AND', '1');
}

function anyOf(filters: unknown): Sql {
  if (!Array.isArray(filters) || filters.length === 0) throw new Error('$or expects a non-empty array of filters');
  return join(filters.map(where), 'OR', '0');
}

function orderBy(sort: FindOptions['sort'] = []): string {
  const keys = sort.map(([field, direction]) => {
    if (direction !== 1 && direction !== -1) throw new Error(`${field}: sort direction must be 1 or -1`);
    return `${value(field)} ${direction === 1 ? 'ASC' : 'DESC'}`;
  });
  // SQLite, like MongoDB, orders NULL (missing) lowest. The id makes equal keys page stably.
  return [...keys, 'id ASC'].join(', ');
}

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return -1; // SQLite: no limit
  if (!Number.isInteger(limit) || limit < 0) throw new Error(`limit must be a non-negative integer, got ${limit}`);
  return limit;
}

/** A string as an SQL literal: quotes doubled, so any collection name is safe in the text. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** `collection = '<name>'`: the term that lets SQLite use the collection's partial indexes. */
const inCollection = (collection: string) => `collection = ${literal(collection)}`;

function indexName(collection: string, fields: readonly string[], partial: boolean): string {
  // The readable part may collide after sanitizing ('a-b' vs 'a_b'); the digest may not.
  const readable = `${collection}_${fields.join('_')}`.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 48);
  const digest = createHash('sha256')
    .update(JSON.stringify(partial ? ['partial', collection, fields] : [collection, fields]))
    .digest('hex')
    .slice(0, 12);
  return `docs_${readable}_${digest}`;
}

/**
 * An index over one collection's documents only. Indexes over the whole table (as stores made
 * before 2026-11 have them, `legacy`) held an entry for every document of every collection, and
 * each write of a document updated all of them: fifteen index entries per job document where
 * four are its own; replay ran about a third slower.
 */
function indexDdl(collection: string, fields: readonly string[]): { create: string; dropLegacy: string } {
  if (fields.length === 0) throw new Error('ensureIndex needs at least one field');
  const columns = fields.map(value).join(', ');
  return {
    create: `CREATE INDEX IF NOT EXISTS "${indexName(collection, fields, true)}" ON docs (${columns}) WHERE ${inCollection(collection)}`,
    dropLegacy: `DROP INDEX IF EXISTS "${indexName(collection, fields, false)}"`,
  };
}

const containsIgnoringCase = (haystack: unknown, needle: unknown): number =>
  typeof haystack === 'string' && typeof needle === 'string' && haystack.toLowerCase().includes(needle.toLowerCase()) ? 1 : 0;

export interface SqliteReadStore extends ReadStore {
  /** For /readyz: rejects with `unavailable` when the file cannot take a write (read-only, I/O error, disk full). */
  probeWritable(): Promise<void>;
  /**
   * The API's reads, from a snapshot of at most `maxLagMs` (see `snapshotQueriesOn`), with the
   * documents read by id kept while nothing changes (about 64 MiB of JSON text at most); the same
   * view on every call. A `:memory:` store has no second connection: its own queries.
   * `moves` counts changes made elsewhere that a read must see at once (the projector's
   * watermark, when another process projects): a snapshot begun before the last one ends.
   */
  snapshotQueries(maxLagMs?: number, memoBytes?: number, moves?: () => number): ReadQueries;
  /** The snapshot's memo: documents held, and reads by id answered from it or not (all zero before `snapshotQueries`). */
  snapshotMemo(): CacheStats;
}

export type SqliteReadStoreOptions = {
  path: string;
  /** Opens the file read-only: tools that only read, and tests of a store that cannot be written. */
  readonly?: boolean;
  /** Caps the file at this many pages (PRAGMA max_page_count); a write beyond fails as on a full disk. */
  maxPageCount?: number;
  /** When the WAL is copied back into the database, on a thread of its own (wal-checkpointer.ts). */
  checkpoints?: WalCheckpointOptions;
};

/** The statement `find` runs (exported for the test of its query plan). */
export function findSql(collection: string, filter: Filter, options: FindOptions = {}): Sql {
  const condition = where(filter);
  return {
    text: `SELECT doc FROM docs WHERE ${inCollection(collection)} AND ${condition.text} ORDER BY ${orderBy(options.sort)} LIMIT ?`,
    params: [...condition.params, checkLimit(options.limit)],
  };
}

/** The statement `count` runs (exported for the test of its query plan). */
export function countSql(collection: string, filter: Filter): Sql {
  const condition = where(filter);
  return { text: `SELECT COUNT(*) AS n FROM docs WHERE ${inCollection(collection)} AND ${condition.text}`, params: condition.params };
}

/** get, find, getMany, sum and count over one connection. */
function queriesOn(db: Database.Database): ReadQueries {
  // SQLite's lower() and LIKE fold ASCII only; JavaScript folds Unicode, closer to MongoDB's /i.
  db.function('contains_ci', { deterministic: true }, containsIgnoringCase);
  const selectDoc = db.prepare<[string, string], { doc: string }>('SELECT doc FROM docs WHERE collection = ? AND id = ?');
  const selectMany = db.prepare<[string, string], { doc: string }>(
    'SELECT doc FROM docs WHERE collection = ? AND id IN (SELECT value FROM json_each(?))',
  );
  return {
    async get(collection, id) {
      const row = selectDoc.get(collection, id);
      return row ? (JSON.parse(row.doc) as Doc) : null;
    },
    async getJson(collection, id) {
      return selectDoc.get(collection, id)?.doc ?? null;
    },
    async find(collection, filter: Filter, findOptions = {}) {
      const query = findSql(collection, filter, findOptions);
      const rows = db.prepare<unknown[], { doc: string }>(query.text).all(...query.params);
      return rows.map((row) => JSON.parse(row.doc) as Doc);
    },
    async sum(collection, filter: Filter, field) {
      const condition = where(filter);
      const text = `SELECT TOTAL(${value(field)}) AS total FROM docs WHERE ${inCollection(collection)} AND ${condition.text}`;
      return db.prepare<unknown[], { total: number }>(text).get(...condition.params)?.total ?? 0;
    },
    async count(collection, filter: Filter) {
      const query = countSql(collection, filter);
      return db.prepare<unknown[], { n: number }>(query.text).get(...query.params)?.n ?? 0;
    },
    async getMany(collection, ids) {
      return selectMany.all(collection, JSON.stringify(ids)).map((row) => JSON.parse(row.doc) as Doc);
    },
  };
}

/**
 * Reads from a snapshot: one read transaction, held for at most `maxLagMs` and ended at once
 * when this process has written since it began (`writes` counts them), so a process reads its
 * own writes and sees another's within `maxLagMs`. It is never held longer, so checkpoints are
 * not held back.
 *
 * Why: in WAL mode every read transaction takes and drops a read lock on the -shm file with two
 * fcntl calls, and on the VMs this runs on a syscall costs microseconds; with the B-tree pages a
 * request pushes out of the CPU's caches, a point read cost about 16 µs in the service against
 * 4.5 µs alone (measured). The snapshot pays for the locks once per `maxLagMs`, and `get` keeps
 * the text of the documents it read (up to `memoBytes`) for as long as nothing is committed:
 * `PRAGMA data_version`, read as each snapshot begins, changes when any other connection commits.
 */
function snapshotQueriesOn(
  db: Database.Database,
  options: { maxLagMs: number; memoBytes: number; writes: () => number },
): { queries: ReadQueries; memo: () => CacheStats } {
  const direct = queriesOn(db);
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  const selectText = db.prepare<[string, string], string>('SELECT doc FROM docs WHERE collection = ? AND id = ?').pluck();
  // One map per collection, emptied when anything is committed. A full memo keeps what it holds
  // and reads the rest from the store: emptied whole when full, it missed every read of a poll
  // cycling over more jobs than it holds; an LRU's bookkeeping cost a tenth of a hit (measured).
  const texts = new Map<string, Map<string, string>>();
  let memoSize = 0; // characters, a byte each for the ASCII JSON of the read models
  let hits = 0;
  let misses = 0;
  const forget = () => {
    texts.clear();
    memoSize = 0;
  };
  let version: number | undefined;
  let began = -1;
  let timer: NodeJS.Timeout | undefined;
  const end = () => {
    clearTimeout(timer);
    // A failed read may have ended the transaction already (SQLite rolls back on some errors).
    if (db.inTransaction) commit.run();
  };
  const inSnapshot = async <T>(read: () => T | Promise<T>): Promise<T> => {
    if (db.inTransaction && began !== options.writes()) end();
    if (!db.inTransaction) {
      begin.run();
      began = options.writes();
      // Also what pins the snapshot: the version is the snapshot's own.
      const now = dataVersion.get();
      if (now !== version) forget();
      version = now;
      timer = setTimeout(end, options.maxLagMs).unref();
    }
    return read();
  };
  const getText = (collection: string, id: string): string | undefined => {
    let docs = texts.get(collection);
    const memoized = docs?.get(id);
    if (memoized !== undefined) {
      hits += 1;
      return memoized;
    }
    misses += 1;
    const text = selectText.get(collection, id);
    if (text === undefined || memoSize + text.length + id.length > options.memoBytes) return text;
    if (!docs) texts.set(collection, (docs = new Map()));
    docs.set(id, text);
    memoSize += text.length + id.length;
    return text;
  };
  const queries: ReadQueries = {
    get: (collection, id) =>
      inSnapshot(() => {
        const text = getText(collection, id);
        // Parsed on every call: callers get a document of their own.
        return text === undefined ? null : (JSON.parse(text) as Doc);
      }),
    getJson: (collection, id) => inSnapshot(() => getText(collection, id) ?? null),
    find: (collection, filter, findOptions) => inSnapshot(() => direct.find(collection, filter, findOptions)),
    getMany: (collection, ids) => inSnapshot(() => direct.getMany(collection, ids)),
    sum: (collection, filter, field) => inSnapshot(() => direct.sum(collection, filter, field)),
    count: (collection, filter) => inSnapshot(() => direct.count(collection, filter)),
  };
  const memo = (): CacheStats => ({ entries: [...texts.values()].reduce((n, docs) => n + docs.size, 0), hits, misses });
  return { queries, memo };
}

export function createSqliteReadStore(options: SqliteReadStoreOptions): SqliteReadStore {
  const file: StoreFile = { name: 'read store', path: options.path, remedy: 'move it away and run npm run replay to rebuild it' };
  const db = openDatabase(file, options, (opened) => {
    // Reads are point lookups at random ids: pages from memory, not a pread per page.
    opened.pragma('cache_size = -65536');
    opened.pragma('mmap_size = 268435456');
    if (options.readonly) return;
    walAtNormal(opened);
    leaveCheckpointsToThread(opened);
    opened.pragma('busy_timeout = 5000');
    // A WAL emptied by a checkpoint is cut back to this size when it restarts.
    opened.pragma('journal_size_limit = 16777216');
    if (options.maxPageCount) opened.pragma(`max_page_count = ${Math.floor(options.maxPageCount)}`);
    opened.exec(SCHEMA);
  });
  const queries = queriesOn(db);
  // The compare-and-set of `put` is a single statement: no read before the write, so no read
  // lock to upgrade (a writer in another process just waits on busy_timeout), and one statement
  // where BEGIN, read, write, COMMIT were four. The projector and replay write through it.
  const insertIfAbsent = db.prepare<[string, string, number, string]>(
    'INSERT INTO docs (collection, id, rev, doc) VALUES (?, ?, ?, ?) ON CONFLICT (collection, id) DO NOTHING',
  );
  const updateIfRev = db.prepare<[number, string, string, string, number]>(
    'UPDATE docs SET rev = ?, doc = ? WHERE collection = ? AND id = ? AND rev = ?',
  );
  const deleteAll = db.prepare<[string]>('DELETE FROM docs WHERE collection = ?');
  let writesSoFar = 0;
  let snapshot: { db: Database.Database; queries: ReadQueries; memo: () => CacheStats } | undefined;

  /**
   * The WAL is copied back into the database on a thread of its own, every so many commits and once
   * more when they pause (wal-checkpointer.ts). The pause's matters to reads: while any frame is not
   * copied back every read searches the WAL index first (after the projector had caught up on
   * 50,000 jobs, a point read took 19 µs instead of 5, measured, and every `GET /jobs/{id}` paid).
   */
  const checkpoints = options.readonly || db.memory ? null : walCheckpointer(db, options.checkpoints);
  const committed = () => {
    writesSoFar += 1;
    checkpoints?.committed();
  };

  const put = (collection: string, doc: Doc, expectedRev: number | null): PutOutcome => {
    const json = JSON.stringify(doc);
    const { changes } =
      expectedRev === null
        ? insertIfAbsent.run(collection, doc._id, doc._rev, json)
        : updateIfRev.run(doc._rev, json, collection, doc._id, expectedRev);
    return changes === 1 ? 'written' : 'stale';
  };

  // One transaction, one commit, for a page of replayed documents, or a batch of the projector's.
  const putAll = db.transaction((writes: readonly CollectionWrite[]) => writes.map((w) => put(w.collection, w.doc, w.expectedRev)));

  const snapshotQueries = (maxLagMs = 20, memoBytes = 64 << 20, moves?: () => number): ReadQueries => {
    if (db.memory) return queries;
    if (!snapshot) {
      const second = openDatabase(file, options, (opened) => {
        opened.pragma('cache_size = -65536');
        opened.pragma('mmap_size = 268435456');
      });
      const writes = moves ? () => writesSoFar + moves() : () => writesSoFar;
      const made = snapshotQueriesOn(second, { maxLagMs, memoBytes, writes });
      snapshot = { db: second, queries: guardMethods(file, made.queries), memo: made.memo };
    }
    return snapshot.queries;
  };

  // Every method, so that a storage fault anywhere is a retriable 503 naming no path.
  const methods = guardMethods<Omit<SqliteReadStore, 'snapshotQueries' | 'snapshotMemo'>>(file, {
    ...queries,
    async put(collection, doc, expectedRev) {
      const outcome = put(collection, doc, expectedRev);
      committed();
      return outcome;
    },
    async putMany(writes) {
      const outcomes = putAll(writes);
      committed();
      return outcomes;
    },
    async ensureIndex(collection, fields) {
      const ddl = indexDdl(collection, fields);
      db.exec(ddl.create);
      db.exec(ddl.dropLegacy);
    },
    async deleteMany(collection, filter) {
      const condition = where(filter);
      const { changes } = db.prepare(`DELETE FROM docs WHERE ${inCollection(collection)} AND ${condition.text}`).run(...condition.params);
      committed();
      return changes;
    },
    async clear(collection) {
      deleteAll.run(collection);
      committed();
    },
    async probeWritable() {
      probeWritable(file, db, () => new Date());
    },
    flush: () => syncWal(db),
    async close() {
      await checkpoints?.close();
      snapshot?.db.close();
      db.close();
    },
  });
  const snapshotMemo = (): CacheStats => snapshot?.memo() ?? { entries: 0, hits: 0, misses: 0 };
  return { ...methods, snapshotQueries, snapshotMemo };
}
