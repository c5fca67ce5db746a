import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

// From sources (tsx: tests, the CLI in development) a thread needs the same TypeScript loader.
const FROM_SOURCES = __filename.endsWith('.ts');

/**
 * A worker thread running `<name>.ts` (from sources) or `<name>.js` (built) of this folder, not
 * keeping the process alive: its owner refs it while it waits for an answer.
 */
export function startWorker(name: string, workerData: unknown): Worker {
  const worker = new Worker(join(__dirname, `${name}${FROM_SOURCES ? '.ts' : '.js'}`), {
    workerData,
    ...(FROM_SOURCES ? { execArgv: ['--require', require.resolve('tsx/cjs')] } : {}),
  });
  worker.unref();
  return worker;
}
