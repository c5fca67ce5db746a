import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

/**
 * DATA_DIR holds the event store (webhook secrets, token hashes), the read models and every
 * tenant's media: only the service's own user may read it. Folders are made 0700 and files 0600,
 * and ones an older version left open to others are tightened when the service opens them.
 */

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Makes `path` (and missing parents) 0700, or tightens it if it exists and is ours. */
export function makePrivateDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(path, PRIVATE_DIR_MODE);
}

/**
 * Creates the SQLite file `path` empty and 0600 before SQLite opens it (SQLite would make it 0644,
 * and makes its `-wal` and `-shm` with the database's mode), or tightens it and those two.
 */
export function makePrivateDatabaseFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', PRIVATE_FILE_MODE));
  } catch {
    // There already, or not creatable here: SQLite's own open says what is wrong, naming the file.
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) tighten(file, PRIVATE_FILE_MODE);
}

/** Drops the group and other bits of a file or folder this user owns; others' files are left alone. */
function tighten(path: string, mode: number): void {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    return; // not there (yet): made with the right mode when it is
  }
  if ((stats.mode & 0o077) === 0 || stats.uid !== process.getuid?.()) return;
  try {
    chmodSync(path, mode);
  } catch {
    // A read-only file system: nothing can be written there either, which its opener reports.
  }
}
