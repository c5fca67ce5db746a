import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The folder holding package.json: the same from sources (tsx) and from the compiled dist/. */
function findProjectRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'schemas'))) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the project root above ${start}`);
  }
}

export const PROJECT_ROOT = findProjectRoot(__dirname);
export const API_SCHEMA_DIR = join(PROJECT_ROOT, 'schemas', 'api');
export const EVENT_SCHEMA_DIR = join(PROJECT_ROOT, 'schemas', 'events');
