import Database from 'better-sqlite3';
import { statfsSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { AppError } from '../../domain/errors';
import { makePrivateDatabaseFile } from '../local/private-files';

/**
 * What the embedded stores share about their SQLite files: opening one so that a damaged file
 * stops start-up with what to do about it, and turning the errors that mean "the storage is
 * unusable" into a retriable `unavailable` (503) whose message says what is wrong without
 * printing the server's paths. The path and the SQLite code stay in the error's `cause`, which
 * the logs print.
 */

export type StoreFile = {
  /** As clients read it: "the event store is read-only". */
  readonly name: 'event store' | 'read store';
  readonly path: string;
  /** What an operator does about a file that is not a readable database. */
  readonly remedy: string;
};

// Extended codes share their primary code's prefix (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED).
// SQLITE_BUSY reaches us only once busy_timeout has run out.
const FAULTS: readonly (readonly [RegExp, string])[] = [
  [/^SQLITE_READONLY/, 'is read-only'],
  [/^SQLITE_FULL$/, 'cannot write: disk full'],
  [/^SQLITE_IOERR/, 'cannot read or write its file (I/O error)'],
  [/^SQLITE_(CORRUPT|NOTADB)/, 'file is damaged'],
  [/^SQLITE_CANTOPEN/, 'cannot open its file'],
  [/^SQLITE_(BUSY|LOCKED)/, 'is locked by another process; try again'],
];

/** Less free space than this and the probe calls the disk full: a write may need a few pages more. */
const MIN_FREE_BYTES = 1 << 20;

const sqliteCode = (err: unknown): string | null => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : null;
};

/** The `unavailable` error for a storage fault, or null when `err` is something else (a bug, a constraint). */
export function storageFault(file: StoreFile, err: unknown): AppError | null {
  const code = sqliteCode(err);
  const problem = code && FAULTS.find(([pattern]) => pattern.test(code))?.[1];
  if (!problem) return null;
  const subject = problem === 'file is damaged' ? `the ${file.name}'s` : `the ${file.name}`;
  const fault = new AppError('unavailable', `${subject} ${problem}`, { retriable: true });
  fault.cause = new Error(`${file.path} (${code})`, { cause: err });
  return fault;
}

/** Runs a synchronous SQLite call, rethrowing storage faults as `unavailable`. */
export function guarded<T>(file: StoreFile, run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw storageFault(file, err) ?? err;
  }
}

/** Wraps every method of `target` (all async) so that a storage fault it rejects with becomes `unavailable`. */
export function guardMethods<T extends object>(file: StoreFile, target: T): T {
  const wrapped: Record<string, unknown> = { ...(target as Record<string, unknown>) };
  for (const [key, method] of Object.entries(target)) {
    if (typeof method !== 'function') continue;
    wrapped[key] = (...args: unknown[]) =>
      Promise.resolve(method.apply(target, args)).catch((err: unknown) => {
        throw storageFault(file, err) ?? err;
      });
  }
  return wrapped as T;
}

/** Start-up errors name the file: the operator has to find it. */
function openFailure(file: StoreFile, err: unknown): Error {
  const code = sqliteCode(err) ?? '';
  const reason = err instanceof Error ? err.message : String(err);
  const say = (text: string) => new Error(text, { cause: err });
  if (/^SQLITE_(NOTADB|CORRUPT)/.test(code)) return say(`${file.path} is not a readable SQLite database (${reason}); ${file.remedy}`);
  if (/^SQLITE_CANTOPEN/.test(code)) {
    return say(`${file.path} cannot be opened (${reason}): it must be a file the service may read and write, in a folder it may write`);
  }
  if (/^SQLITE_READONLY/.test(code))
    return say(`${file.path} is read-only (${reason}): the service must be able to write it and its folder`);
  if (code === 'SQLITE_FULL') return say(`${file.path} cannot be written: disk full`);
  if (/^SQLITE_IOERR/.test(code)) return say(`${file.path} cannot be read or written (${reason})`);
  return err instanceof Error ? err : say(reason);
}

/**
 * Opens `file` and runs `setup` (pragmas, schema). better-sqlite3 opens lazily, so a file that is
 * not a database would only fail at the first query: `PRAGMA schema_version` reads just the
 * header, which is cheap at any size (a `quick_check` reads every page).
 */
export function openDatabase(file: StoreFile, options: { readonly?: boolean }, setup: (db: Database.Database) => void): Database.Database {
  let db: Database.Database | undefined;
  try {
    if (!options.readonly && file.path !== ':memory:') makePrivateDatabaseFile(file.path);
    db = new Database(file.path, { readonly: options.readonly ?? false });
    db.pragma('schema_version');
    setup(db);
    return db;
  } catch (err) {
    db?.close();
    throw openFailure(file, err);
  }
}

export const WRITE_PROBE_SCHEMA = 'CREATE TABLE IF NOT EXISTS write_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at TEXT NOT NULL)';

/**
 * A file whose commits need not each be durable (the read store, the search index: what they
 * hold can be projected again): WAL at `synchronous = NORMAL`, a commit reaching the WAL without
 * an fsync. better-sqlite3 builds SQLite with that default for WAL files, but a connection that
 * switched a new file to WAL reports FULL while behaving as NORMAL (measured with strace), so it
 * is set here, where it can be read. Durability comes from `syncWal`.
 */
export function walAtNormal(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
}

/**
 * Copies what it can of the WAL back into the database on the connection `connect` gives (opened
 * there if need be), without waiting: PASSIVE takes no busy handler, and fails fast when another
 * connection is checkpointing. A checkpoint that cannot run now (busy, or a file that cannot be
 * opened or written) is left to the next one, and the committing connections' own checkpoint
 * bounds the WAL meanwhile; a storage fault surfaces loudly on their reads and writes.
 */
export function passiveCheckpoint(connect: () => Database.Database): void {
  try {
    connect().pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Retried at the next checkpoint (above).
  }
}

/**
 * Makes every commit so far on a `walAtNormal` file durable. At NORMAL a commit's frames reach the
 * WAL file in the kernel's page cache, not the disk; an fsync of that file puts every frame
 * written before it on the disk. It runs in libuv's thread pool on a descriptor of its own, so the
 * event loop does not wait for it (an fsync on the connection's thread took 2–17 ms, five times a
 * second, under bench (f)) and SQLite's write lock is never held for it. No WAL file: nothing was
 * written since the last connection closed, and that close checkpointed it into the database
 * file and synced it.
 */
export async function syncWal(db: Database.Database): Promise<void> {
  if (db.memory || db.readonly) return;
  let wal: FileHandle;
  try {
    wal = await open(`${db.name}-wal`, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    await wal.sync();
  } finally {
    await wal.close();
  }
}

/**
 * Rejects with `unavailable` when the file cannot take a write. `BEGIN IMMEDIATE` alone passes on
 * a read-only file (SQLite only refuses the first write), and a rolled-back write never reaches
 * the WAL, so the probe commits one row: that is what fails on a read-only file, a file system
 * remounted read-only, or an I/O error. A full disk can still take a commit while the WAL has
 * room, hence the free-space check.
 */
export function probeWritable(file: StoreFile, db: Database.Database, now: () => Date): void {
  if (db.readonly) throw storageFault(file, Object.assign(new Error('opened read-only'), { code: 'SQLITE_READONLY' }));
  guarded(file, () =>
    db.prepare('INSERT INTO write_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at').run(now().toISOString()),
  );
  if (db.memory) return;
  const { bavail, bsize } = statfsSync(dirname(file.path));
  if (bavail * bsize < MIN_FREE_BYTES) {
    const fault = new AppError('unavailable', `the ${file.name} cannot write: disk full`, { retriable: true });
    fault.cause = new Error(`${file.path}: ${bavail * bsize} bytes free`);
    throw fault;
  }
}
