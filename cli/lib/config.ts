import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError, Exit } from './exit';

/** Where the CLI keeps its session and resume records: `$XDG_CONFIG_HOME/mps`, else `~/.config/mps`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'mps');
}

export type Session = { baseUrl: string; token: string };
type StoredConfig = { base_url?: string; token?: string };

const configFile = () => join(configDir(), 'config.json');

/** The API's base URL as the SDK wants it: no trailing slash, ending in /v1 (added when left out). */
export function normalizeBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new CliError(Exit.usage, `--base-url: not a URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(Exit.usage, `--base-url: must be http or https: ${raw}`);
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path.endsWith('/v1') ? path : `${path}/v1`}`;
}

/**
 * Secrets are written private from the first byte: the directory 0700 and the file 0600 (mode at
 * creation, then chmod in case the file already existed with a wider one). The calls are
 * synchronous: these are files of a few hundred bytes on the path of every `mps import` before its
 * first byte is sent, and four hops through libuv's thread pool cost more than the writes (up to
 * ~15 ms on a busy machine).
 */
export async function writePrivate(name: string, content: string): Promise<string> {
  const dir = configDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}

export async function saveSession(session: Session): Promise<string> {
  const stored: StoredConfig = { base_url: session.baseUrl, token: session.token };
  return writePrivate('config.json', `${JSON.stringify(stored, null, 2)}\n`);
}

/** Forgets the session; true when there was one. */
export async function removeSession(): Promise<boolean> {
  const path = configFile();
  const existed = await readFile(path).then(
    () => true,
    () => false,
  );
  await rm(path, { force: true });
  return existed;
}

/** Read synchronously, as `writePrivate` writes. */
function storedConfig(): StoredConfig {
  try {
    return JSON.parse(readFileSync(configFile(), 'utf8')) as StoredConfig;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(Exit.usage, `cannot read ${configFile()}: ${(err as Error).message}; run mps login again`);
  }
}

/**
 * How long the client waits for an answer (MPS_TIMEOUT_SECONDS; the SDK's 30 s unless set): a
 * server that accepts and never answers then fails as unreachable instead of hanging the command.
 */
export function clientTimeouts(env: NodeJS.ProcessEnv = process.env): { timeoutMs?: number } {
  const raw = env.MPS_TIMEOUT_SECONDS;
  if (!raw) return {};
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new CliError(Exit.usage, `MPS_TIMEOUT_SECONDS: must be a number of seconds above 0 (got ${raw})`);
  return { timeoutMs: seconds * 1000 };
}

/** The session: MPS_BASE_URL / MPS_TOKEN override the stored one, each on its own (scripts, CI). */
export async function loadSession(env: NodeJS.ProcessEnv = process.env): Promise<Session> {
  const stored = storedConfig();
  const baseUrl = env.MPS_BASE_URL || stored.base_url;
  const token = env.MPS_TOKEN || stored.token;
  if (!baseUrl || !token) throw new CliError(Exit.usage, 'not logged in: run mps login (or set MPS_BASE_URL and MPS_TOKEN)');
  return { baseUrl: normalizeBaseUrl(baseUrl), token };
}
