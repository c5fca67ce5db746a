import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ProcessResult, RunProcessOptions } from '../system/child-process';

/**
 * Runs tools (ffprobe) from a thread of their own, with `runProcess`'s contract: libuv forks and
 * then waits for the exec synchronously, and in the jobs worker, whose heap is large and whose
 * two cores other processes share, that stopped its event loop for 5–12 ms per probe, with every
 * job's downloads and appends behind it. One thread per process, started on the first run and
 * holding the process open only while a run is in flight; if it ever stops, the runs in flight
 * fail (the job is tried again) and the next run starts another.
 */

export type Spawn = (bin: string, args: readonly string[], options: RunProcessOptions) => Promise<ProcessResult>;

/** A run as it crosses to the thread: plain data. */
export type SpawnRequest = {
  readonly id: number;
  readonly bin: string;
  readonly args: readonly string[];
  readonly timeoutMs: number;
  readonly stdoutMaxBytes: number | null;
  readonly stderr: RunProcessOptions['stderr'] | null;
};

/** How a run ended, as plain data; the caller's own errors are made from it on this side. */
export type SpawnOutcome =
  | { readonly kind: 'exited'; readonly result: ProcessResult }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'too_much' }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'spawn_error'; readonly message: string; readonly code?: string }
  | { readonly kind: 'failed'; readonly message: string };

const FROM_SOURCES = __filename.endsWith('.ts');
const ENTRY = join(__dirname, `spawn-thread${FROM_SOURCES ? '.ts' : '.js'}`);

type Thread = { worker: Worker; pending: Map<number, (outcome: SpawnOutcome) => void> };
let thread: Thread | null = null;
let nextId = 0;

function startThread(): Thread {
  const worker = new Worker(ENTRY, FROM_SOURCES ? { execArgv: ['--require', require.resolve('tsx/cjs')] } : {});
  const started: Thread = { worker, pending: new Map() };
  worker.unref();
  worker.on('message', ({ id, outcome }: { id: number; outcome: SpawnOutcome }) => settle(started, id, outcome));
  const stopped = (err?: Error) => {
    if (thread === started) thread = null;
    const outcome: SpawnOutcome = { kind: 'failed', message: `the spawner thread stopped${err ? `: ${err.message}` : ''}` };
    for (const id of [...started.pending.keys()]) settle(started, id, outcome);
  };
  worker.on('error', stopped);
  worker.on('exit', () => stopped());
  return started;
}

function settle(on: Thread, id: number, outcome: SpawnOutcome): void {
  const done = on.pending.get(id);
  if (!done) return;
  on.pending.delete(id);
  if (on.pending.size === 0) on.worker.unref();
  done(outcome);
}

/** `runProcess`, run from the spawner thread: the same outcomes, the same errors (the caller's factories), the same kill on abort and timeout. */
export const spawnOffLoop: Spawn = (bin, args, options) => {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(abortError(signal, options.abortMessage));
  const on = (thread ??= startThread());
  const id = nextId++;
  return new Promise<ProcessResult>((resolve, reject) => {
    // Cancelled there, where the child is killed; the run rejects once it is.
    const onAbort = () => on.worker.postMessage({ cancel: id });
    signal?.addEventListener('abort', onAbort, { once: true });
    if (on.pending.size === 0) on.worker.ref();
    on.pending.set(id, (outcome) => {
      signal?.removeEventListener('abort', onAbort);
      if (outcome.kind === 'exited') resolve(outcome.result);
      else reject(errorOf(outcome, options));
    });
    const request: SpawnRequest = {
      id,
      bin,
      args,
      timeoutMs: options.timeoutMs,
      stdoutMaxBytes: options.stdout?.maxBytes ?? null,
      stderr: options.stderr ?? null,
    };
    on.worker.postMessage(request);
  });
};

function errorOf(outcome: Exclude<SpawnOutcome, { kind: 'exited' }>, options: RunProcessOptions): Error {
  switch (outcome.kind) {
    case 'timeout':
      return options.onTimeout();
    case 'too_much':
      return options.stdout!.onTooMuch();
    case 'aborted':
      return abortError(options.signal, options.abortMessage);
    case 'spawn_error': {
      const err = Object.assign(new Error(outcome.message), outcome.code ? { code: outcome.code } : {});
      return options.onSpawnError ? options.onSpawnError(err) : err;
    }
    case 'failed':
      return new Error(outcome.message);
  }
}

/** As `runProcess` rejects on abort: the signal's reason when it is an Error, else an AbortError. */
function abortError(signal: AbortSignal | undefined, message = 'the process was aborted'): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException(message, 'AbortError');
}
