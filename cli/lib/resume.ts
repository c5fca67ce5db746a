import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { configDir, writePrivate } from './config';

/**
 * Resume records of uploads in progress, in `uploads.json` of the config dir: per local file (its
 * absolute path, size and mtime, so an edited file starts over), the upload URL and the job that
 * waits for it. A record is written before the first byte is sent and removed once the server
 * holds the whole file, so `mps import` run again after Ctrl-C finds it and sends only the rest.
 * The upload URL is a bearer secret (signed), hence the private file.
 */
export type UploadRecord = { upload_url: string; job_id: string; project_id: string; ref: string };

const FILE = 'uploads.json';

export type FileIdentity = { key: string; path: string; size: number };

export async function identify(path: string): Promise<FileIdentity> {
  const absolute = resolve(path);
  const s = await stat(absolute);
  return { key: `${absolute}|${s.size}|${s.mtimeMs}`, path: absolute, size: s.size };
}

/** Read synchronously, as `writePrivate` writes (a small file on the path to the first byte). */
function readAll(): Record<string, UploadRecord> {
  try {
    return JSON.parse(readFileSync(join(configDir(), FILE), 'utf8')) as Record<string, UploadRecord>;
  } catch {
    // None yet, or unreadable: an upload then starts over, which loses time, not data.
    return {};
  }
}

export async function findRecord(key: string): Promise<UploadRecord | undefined> {
  return readAll()[key];
}

export async function saveRecords(records: Map<string, UploadRecord>): Promise<void> {
  const all = readAll();
  for (const [key, record] of records) all[key] = record;
  await writePrivate(FILE, `${JSON.stringify(all, null, 2)}\n`);
}

export async function removeRecord(key: string): Promise<void> {
  const all = readAll();
  if (!(key in all)) return;
  delete all[key];
  await writePrivate(FILE, `${JSON.stringify(all, null, 2)}\n`);
}
