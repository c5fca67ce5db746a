import { readFileSync } from 'node:fs';

/**
 * The soft limit on open files of this process (`ulimit -n`), from /proc/self/limits; null where
 * the system does not tell (not Linux) or it is unlimited. Servers size their connection and
 * upload caps below it, so that slow clients cannot take every descriptor (issue 19).
 */
export function openFileLimit(limitsFile = '/proc/self/limits'): number | null {
  try {
    const line = readFileSync(limitsFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s+/)[3]);
    return Number.isSafeInteger(soft) && soft > 0 ? soft : null;
  } catch {
    return null;
  }
}
