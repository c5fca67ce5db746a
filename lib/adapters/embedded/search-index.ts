import { planSearch, snippet, containsAll, nameKey, typeOf, type Clause, type SearchPlan } from '../../app/snippet';
import type { SearchEntry, SearchHit, SearchIndex, SearchQuery, SearchSort } from '../../ports/search-index';
import { guardMethods, openDatabase, probeWritable, syncWal, walAtNormal, WRITE_PROBE_SCHEMA, type StoreFile } from './sqlite';
import { leaveCheckpointsToThread, walCheckpointer, type WalCheckpointOptions } from './wal-checkpointer';

/**
 * The embedded SearchIndex: SQLite FTS5 in its own file (WAL, rebuilt by replay like the read store).
 *
 * - `search_fts` is contentless (`content=''`) with `contentless_delete=1`: it holds only the words,
 *   so an hour of transcript is stored once (in `search_content`), and replacing or removing an
 *   entry is a delete by rowid. An external-content table would need the exact old text handed
 *   back on every delete, or its index silently drifts; FTS5's own `snippet()` would need the text
 *   too, and the snippet is cut in JS anyway so that both adapters mark and escape alike.
 * - The drive is a column of the FTS table holding one token (`d` + hex of the id) and the first
 *   term of every MATCH, so FTS5 intersects with that drive's doclist instead of ranking every
 *   drive's matches; the join re-checks `drive_id` all the same. Types and dates filter the joined
 *   rows (a primary-key lookup each). `queryPlan` shows the plan the tests check.
 * - Each clause is handed to FTS5 as a quoted string of words that contain no quote, so nothing a
 *   user types is FTS5 syntax. Names and transcripts are searched as two column-filtered copies of
 *   the query joined by OR, so the whole query must match within one field.
 * - bm25 weighs the name 10, the transcript 1 and the drive token 0.
 */

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS search_entries (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    drive_id   TEXT NOT NULL,
    type       TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    name_key   TEXT NOT NULL,
    entry      TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS search_content (seq INTEGER PRIMARY KEY, content TEXT NOT NULL);
  CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(
    scope, name, body, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
  );
  ${WRITE_PROBE_SCHEMA};
`;

const ORDER: Record<SearchSort, string> = {
  relevance: 'e.name_key = @exact DESC, bm25(search_fts, 0.0, 10.0, 1.0), e.updated_at DESC, e.id',
  newest: 'e.updated_at DESC, e.id',
  oldest: 'e.updated_at ASC, e.id',
};

const searchSql = (sort: SearchSort) => `
  SELECT e.seq AS seq, e.entry AS entry
  FROM search_fts CROSS JOIN search_entries e ON e.seq = search_fts.rowid
  WHERE search_fts MATCH @match AND e.drive_id = @drive
    AND (@types IS NULL OR e.type IN (SELECT value FROM json_each(@types)))
    AND (@after IS NULL OR e.updated_at > @after)
    AND (@before IS NULL OR e.updated_at < @before)
  ORDER BY ${ORDER[sort]}
  LIMIT @limit`;

type Params = {
  match: string;
  drive: string;
  types: string | null;
  after: string | null;
  before: string | null;
  exact: string | null;
  limit: number;
};

const scopeToken = (driveId: string) => `d${Buffer.from(driveId, 'utf8').toString('hex')}`;
// Raw words are runs of letters, digits and marks: no quote can end the string early.
const phrase = (clause: Clause) => `"${clause.raw.join(' ')}"`;

function matchExpression(driveId: string, plan: SearchPlan): string {
  const text = plan.clauses.map(phrase).join(' AND ');
  const perField = plan.fields.map((field) => `{${field === 'name' ? 'name' : 'body'}} : (${text})`);
  return `{scope} : "${scopeToken(driveId)}" AND (${perField.join(' OR ')})`;
}

const paramsOf = (query: SearchQuery, plan: SearchPlan): Params => ({
  match: matchExpression(query.drive_id, plan),
  drive: query.drive_id,
  types: plan.types && JSON.stringify(plan.types),
  after: plan.after,
  before: plan.before,
  exact: plan.exactName,
  limit: query.limit,
});

export interface SqliteSearchIndex extends SearchIndex {
  /** For /readyz: rejects with `unavailable` when the file cannot take a write. */
  probeWritable(): Promise<void>;
  /** EXPLAIN QUERY PLAN of the statement `search` runs for `query`, one detail line per step. */
  queryPlan(query: SearchQuery): Promise<string[]>;
}

export type SqliteSearchIndexOptions = {
  path: string;
  readonly?: boolean;
  maxPageCount?: number;
  /** When the WAL is copied back into the database, on a thread of its own (wal-checkpointer.ts). */
  checkpoints?: WalCheckpointOptions;
};

export function createSqliteSearchIndex(options: SqliteSearchIndexOptions): SqliteSearchIndex {
  // Faults read "the read store …": the index is part of the read side and replay rebuilds it.
  const file: StoreFile = { name: 'read store', path: options.path, remedy: 'move it away and run npm run replay to rebuild it' };
  const db = openDatabase(file, options, (opened) => {
    opened.pragma('cache_size = -65536');
    if (options.readonly) return;
    walAtNormal(opened);
    leaveCheckpointsToThread(opened);
    opened.pragma('busy_timeout = 5000');
    if (options.maxPageCount) opened.pragma(`max_page_count = ${Math.floor(options.maxPageCount)}`);
    opened.exec(SCHEMA);
  });

  const statements = new Map(
    (['relevance', 'newest', 'oldest'] as const).map((sort) => [
      sort,
      db.prepare<[Params], { seq: number; entry: string }>(searchSql(sort)),
    ]),
  );
  const selectStored = db.prepare<[string], { seq: number; entry: string }>('SELECT seq, entry FROM search_entries WHERE id = ?');
  const selectContent = db.prepare<[number], { content: string }>('SELECT content FROM search_content WHERE seq = ?');
  const insertEntry = db.prepare<[string, string, string, string, string, string]>(
    'INSERT INTO search_entries (id, drive_id, type, updated_at, name_key, entry) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const updateEntry = db.prepare<[string, string, string, string, string, number]>(
    'UPDATE search_entries SET drive_id = ?, type = ?, updated_at = ?, name_key = ?, entry = ? WHERE seq = ?',
  );
  const insertWords = db.prepare<[number, string, string, string | null]>(
    'INSERT INTO search_fts (rowid, scope, name, body) VALUES (?, ?, ?, ?)',
  );
  const insertContent = db.prepare<[number, string]>('INSERT INTO search_content (seq, content) VALUES (?, ?)');
  const deleteWords = db.prepare<[number]>('DELETE FROM search_fts WHERE rowid = ?');
  const deleteContent = db.prepare<[number]>('DELETE FROM search_content WHERE seq = ?');
  const deleteEntry = db.prepare<[number]>('DELETE FROM search_entries WHERE seq = ?');

  /**
   * The words of an entry (its drive's scope token, its name, its transcript) are rewritten in
   * the FTS index only when one of them changed. The projector upserts a project's entry again on
   * each of its events, mostly for a new `updated_at`: the words' delete and insert were most of
   * the search index's share of an import.
   */
  const wordsUnchanged = (seq: number, stored: string, entry: SearchEntry): boolean => {
    const before = JSON.parse(stored) as Pick<SearchEntry, 'drive_id' | 'name'>;
    return before.drive_id === entry.drive_id && before.name === entry.name && selectContent.get(seq)?.content === entry.content;
  };
  const upsertOne = (entry: SearchEntry) => {
    const { content, ...stored } = entry;
    const json = JSON.stringify(stored);
    const columns = [entry.drive_id, typeOf(entry), entry.updated_at, nameKey(entry.name), json] as const;
    const found = selectStored.get(entry.id);
    let seq: number;
    if (found) {
      seq = found.seq;
      const same = wordsUnchanged(seq, found.entry, entry);
      if (same && found.entry === json) return;
      updateEntry.run(...columns, seq);
      if (same) return;
      deleteWords.run(seq);
      deleteContent.run(seq);
    } else {
      seq = Number(insertEntry.run(entry.id, ...columns).lastInsertRowid);
    }
    insertWords.run(seq, scopeToken(entry.drive_id), entry.name, content ?? null);
    if (content) insertContent.run(seq, content);
  };
  const removeOne = (id: string) => {
    const found = selectStored.get(id);
    if (!found) return;
    for (const statement of [deleteWords, deleteContent, deleteEntry]) statement.run(found.seq);
  };
  const upsertAll = db.transaction((entries: readonly SearchEntry[]) => entries.forEach(upsertOne));
  const removeAll = db.transaction((ids: readonly string[]) => ids.forEach(removeOne));
  const clearAll = db.transaction(() => {
    db.exec("DELETE FROM search_entries; DELETE FROM search_content; INSERT INTO search_fts (search_fts) VALUES ('delete-all');");
  });

  const hitOf = (row: { seq: number; entry: string }, plan: SearchPlan): SearchHit => {
    const entry = JSON.parse(row.entry) as SearchHit['entry'];
    const nameSearched = plan.fields.includes('name');
    if (nameSearched && (plan.fields.length === 1 || containsAll(entry.name, plan.clauses))) return { entry, matched: 'name' };
    const content = selectContent.get(row.seq)?.content;
    // FTS5 and this module cut words alike but for exotic scripts; no transcript means the name matched.
    if (content === undefined) return { entry, matched: 'name' };
    return { entry, matched: 'content', snippet: snippet(content, plan.clauses) };
  };

  // One read transaction: the transcripts snippets are cut from are those the ranking saw.
  const searchSnapshot = db.transaction((query: SearchQuery, plan: SearchPlan) =>
    statements
      .get(query.sort)!
      .all(paramsOf(query, plan))
      .map((row) => hitOf(row, plan)),
  );

  const checkpoints = options.readonly || db.memory ? null : walCheckpointer(db, options.checkpoints);

  return guardMethods<SqliteSearchIndex>(file, {
    async upsert(entries) {
      upsertAll(entries);
      checkpoints?.committed();
    },
    async remove(ids) {
      removeAll(ids);
      checkpoints?.committed();
    },
    async search(query) {
      const plan = planSearch(query);
      return plan.clauses.length === 0 ? [] : searchSnapshot(query, plan);
    },
    async queryPlan(query) {
      const plan = planSearch(query);
      const sql = `EXPLAIN QUERY PLAN ${searchSql(query.sort)}`;
      return db
        .prepare<[Params], { detail: string }>(sql)
        .all(paramsOf(query, plan))
        .map((row) => row.detail);
    },
    async clear() {
      clearAll();
      checkpoints?.committed();
    },
    async probeWritable() {
      probeWritable(file, db, () => new Date());
    },
    flush: () => syncWal(db),
    async close() {
      await checkpoints?.close();
      db.close();
    },
  });
}
