import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where the MCP server finds the API: the CLI's settings, read and never written here. */
export type Connection = { baseUrl: string; token: string };

/** Why there is no connection, worded for the model to pass on to its user. */
export const NOT_LOGGED_IN = 'The Media Project Service is not configured: run `mps login` (or set MPS_BASE_URL and MPS_TOKEN).';

/** `$XDG_CONFIG_HOME/mps/config.json`, else `~/.config/mps/config.json`: the file `mps login` writes. */
export function configFilePath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'mps', 'config.json');
}

/**
 * The connection from MPS_BASE_URL and MPS_TOKEN when both are set, else from the CLI's config
 * file `{base_url, token}`; null when neither gives both. A file that is not JSON is an error
 * naming the file, not "not configured": the user has to fix it.
 */
export async function loadConnection(env: NodeJS.ProcessEnv = process.env): Promise<Connection | null> {
  if (env.MPS_BASE_URL && env.MPS_TOKEN) return { baseUrl: apiBase(env.MPS_BASE_URL), token: env.MPS_TOKEN };
  const path = configFilePath(env);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let file: { base_url?: unknown; token?: unknown };
  try {
    file = JSON.parse(text) as typeof file;
  } catch {
    throw new Error(`${path} is not JSON: run \`mps login\` again`);
  }
  const baseUrl = env.MPS_BASE_URL || (typeof file.base_url === 'string' ? file.base_url : '');
  const token = env.MPS_TOKEN || (typeof file.token === 'string' ? file.token : '');
  return baseUrl && token ? { baseUrl: apiBase(baseUrl), token } : null;
}

/** The API's base ends in /v1 (what the SDK wants); a bare `http://host:8080` is given it. */
export function apiBase(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return /\/v1$/.test(trimmed) ? trimmed : `${trimmed}/v1`;
}
