import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { configDir, writePrivate } from './config';

/**
 * Resume records of `mps import` commands in progress, in `uploads.json` of the config dir. A
 * record belongs to a whole command, keyed by its fingerprint (`commandKey`): the same command run
 * again resumes it, and any other command (another item, name, project, composition, base URL,
 * or a local file edited since) starts its own import. It is written before the import's POST with
 * the Idempotency-Key that POST carries, so a rerun after Ctrl-C at any point sends the same key
 * and the server answers the first job instead of making a second; then it gains the job and its
 * upload URLs, and it goes once every upload of the job is done. The upload URLs are bearer
 * secrets (signed), hence the private file.
 */
export type ImportRecord = {
  idempotency_key: string;
  created_at: string;
  /** Set once the POST was answered. */
  job_id?: string;
  project_id?: string;
  /** Media ref → its upload URL. */
  upload_urls?: Record<string, string>;
};

const FILE = 'uploads.json';

/** What a command imports, in its order: a local file by what it is now, a URL as given. */
export type CommandItem = { file: string; size: number; mtime_ms: number } | { url: string };

export type ImportCommand = { baseUrl: string; items: CommandItem[]; project?: string; name?: string; composition?: string };

/** The fingerprint of a command: a hash of everything that makes its import what it is. */
export function commandKey(command: ImportCommand): string {
  const canonical = JSON.stringify([
    command.baseUrl,
    command.items,
    command.project ?? null,
    command.name ?? null,
    command.composition ?? null,
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

export type LocalFileInfo = { path: string; size: number; mtimeMs: number; isFile: boolean };

export async function identify(path: string): Promise<LocalFileInfo> {
  const absolute = resolve(path);
  const s = await stat(absolute);
  return { path: absolute, size: s.size, mtimeMs: s.mtimeMs, isFile: s.isFile() };
}

/**
 * Read synchronously, as `writePrivate` writes (a small file on the path to the first byte). A
 * record of an older CLI (one per file, no Idempotency-Key) can resume nothing: it is left out.
 */
function readAll(): Record<string, ImportRecord> {
  let all: Record<string, ImportRecord>;
  try {
    all = JSON.parse(readFileSync(join(configDir(), FILE), 'utf8')) as Record<string, ImportRecord>;
  } catch {
    // None yet, or unreadable: an import then starts over, which loses time, not data.
    return {};
  }
  return Object.fromEntries(Object.entries(all).filter(([, r]) => typeof r?.idempotency_key === 'string'));
}

function writeAll(all: Record<string, ImportRecord>): Promise<string> {
  return writePrivate(FILE, `${JSON.stringify(all, null, 2)}\n`);
}

export async function findRecord(key: string): Promise<ImportRecord | undefined> {
  return readAll()[key];
}

export async function saveRecord(key: string, record: ImportRecord): Promise<void> {
  await writeAll({ ...readAll(), [key]: record });
}

export async function removeRecord(key: string): Promise<void> {
  const all = readAll();
  if (!(key in all)) return;
  delete all[key];
  await writeAll(all);
}
