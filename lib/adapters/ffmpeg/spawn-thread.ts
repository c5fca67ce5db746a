import { parentPort } from 'node:worker_threads';
import { runProcess } from '../system/child-process';
import type { SpawnOutcome, SpawnRequest } from './spawner';

/**
 * The spawner's thread (spawner.ts): runs each process it is asked for with `runProcess`, so the
 * fork and the wait for the exec, which libuv does synchronously, stop this thread's loop and not
 * the caller's. Its time limit and its kill on abort are `runProcess`'s, here; what the caller
 * makes of each outcome (its errors) stays with the caller, as functions do not cross threads.
 */

const port = parentPort!;
const running = new Map<number, AbortController>();

/** An error that names the outcome it stands for, so the catch below can tell which one ended the run. */
class Ended extends Error {
  constructor(readonly outcome: SpawnOutcome) {
    super(outcome.kind);
  }
}

async function run(request: SpawnRequest, signal: AbortSignal): Promise<SpawnOutcome> {
  try {
    const result = await runProcess(request.bin, request.args, {
      timeoutMs: request.timeoutMs,
      signal,
      onTimeout: () => new Ended({ kind: 'timeout' }),
      ...(request.stdoutMaxBytes !== null && {
        stdout: { maxBytes: request.stdoutMaxBytes, onTooMuch: () => new Ended({ kind: 'too_much' }) },
      }),
      ...(request.stderr !== null && { stderr: request.stderr }),
      onSpawnError: (err) => new Ended({ kind: 'spawn_error', message: err.message, code: (err as NodeJS.ErrnoException).code }),
    });
    return { kind: 'exited', result };
  } catch (err) {
    if (err instanceof Ended) return err.outcome;
    if (signal.aborted) return { kind: 'aborted' };
    return { kind: 'failed', message: err instanceof Error ? err.message : String(err) };
  }
}

port.on('message', (message: SpawnRequest | { readonly cancel: number }) => {
  if ('cancel' in message) return void running.get(message.cancel)?.abort();
  const controller = new AbortController();
  running.set(message.id, controller);
  void run(message, controller.signal).then((outcome) => {
    running.delete(message.id);
    port.postMessage({ id: message.id, outcome });
  });
});
