import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

export interface RunProcessOptions {
  /** Deadline for the whole run; when it passes the child is killed and the run rejects with `onTimeout()`. */
  timeoutMs: number;
  onTimeout: () => Error;
  /** Aborting kills the child and rejects with the signal's reason, or an AbortError when the reason is not an Error. */
  signal?: AbortSignal;
  /** The AbortError's message; default "the process was aborted". */
  abortMessage?: string;
  /** Collects stdout up to `maxBytes`; more kills the child and rejects with `onTooMuch()`. Omitted: stdout is discarded. */
  stdout?: { maxBytes: number; onTooMuch: () => Error };
  /** Keeps the first or the last `maxBytes` of stderr. Omitted: stderr is discarded. */
  stderr?: { keep: 'head' | 'tail'; maxBytes: number };
  /** Maps a failure to start or signal the child (missing binary, no permission); default: the error itself. */
  onSpawnError?: (err: Error) => Error;
}

export interface ProcessResult {
  /** The exit code, or null when the child died of a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `bin` with `args` (no shell, no stdin) and resolves once it has exited and its output is
 * fully read, whatever the exit code: what a failure means is the caller's to say. It rejects on
 * timeout, abort, too much stdout or a spawn error, and then SIGKILLs the child first, so a stuck
 * tool never outlives the request that started it.
 */
export function runProcess(bin: string, args: readonly string[], options: RunProcessOptions): Promise<ProcessResult> {
  const { signal, stdout: stdoutLimit } = options;
  if (signal?.aborted) return Promise.reject(abortError(signal, options.abortMessage));
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', options.stdout ? 'pipe' : 'ignore', options.stderr ? 'pipe' : 'ignore'] });
    // One byte past the cap is enough to tell that the cap was passed.
    const stdout = collector('head', (stdoutLimit?.maxBytes ?? 0) + 1);
    const stderr = collector(options.stderr?.keep ?? 'head', options.stderr?.maxBytes ?? 0);
    let settled = false;
    // Callers' error factories run only for the outcome that wins, never for a later event.
    const finish = (outcome: () => Error | ProcessResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      const value = outcome();
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    const onAbort = () => finish(() => abortError(signal, options.abortMessage));
    const timer = setTimeout(() => finish(options.onTimeout), options.timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout?.on('data', (chunk: Buffer) => {
      if (stdoutLimit && stdout.add(chunk) > stdoutLimit.maxBytes) finish(stdoutLimit.onTooMuch);
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.add(chunk));
    child.on('error', (err) => finish(() => (options.onSpawnError ? options.onSpawnError(err) : err)));
    // 'close' (not 'exit'): only then are stdout and stderr fully read.
    child.on('close', (code, exitSignal) => finish(() => ({ code, signal: exitSignal, stdout: stdout.text(), stderr: stderr.text() })));
  });
}

function abortError(signal: AbortSignal | undefined, message = 'the process was aborted'): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException(message, 'AbortError');
}

/**
 * Keeps at most `maxBytes` of a stream, from its start or its end. Bytes, not decoded chunks, so
 * a character split between two chunks is not mangled. `add` returns the bytes seen so far.
 */
function collector(keep: 'head' | 'tail', maxBytes: number) {
  const chunks: Buffer[] = [];
  let kept = 0;
  let seen = 0;
  return {
    add(chunk: Buffer): number {
      seen += chunk.length;
      const part = keep === 'head' ? chunk.subarray(0, Math.max(0, maxBytes - kept)) : chunk;
      if (part.length > 0) chunks.push(part);
      kept += part.length;
      // The tail drops whole chunks it no longer needs; text() trims the rest.
      while (keep === 'tail' && chunks.length > 1 && kept - chunks[0].length >= maxBytes) kept -= chunks.shift()?.length ?? 0;
      return seen;
    },
    text() {
      const all = Buffer.concat(chunks);
      return (keep === 'tail' ? all.subarray(Math.max(0, all.length - maxBytes)) : all).toString('utf8');
    },
  };
}

export interface StreamProcessOptions extends Omit<RunProcessOptions, 'stdout'> {
  /** Each complete line of stdout, as it arrives (a long run's progress, not its final output). */
  onStdoutLine: (line: string) => void;
}

/**
 * `runProcess` for a long run whose stdout is read as it comes: each line goes to `onStdoutLine`,
 * none is kept. The child leads a process group of its own, and on timeout or abort the whole group
 * is SIGKILLed; the run settles only once the child has exited and its pipes are closed, so when it
 * rejects nothing of the child can still write a file the caller is about to delete.
 */
export function streamProcess(bin: string, args: readonly string[], options: StreamProcessOptions): Promise<ProcessResult> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(abortError(signal, options.abortMessage));
  return new Promise((resolve, reject) => {
    const [file, argv] = diesWithUs(bin, args);
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', options.stderr ? 'pipe' : 'ignore'], detached: true });
    const stderr = collector(options.stderr?.keep ?? 'head', options.stderr?.maxBytes ?? 0);
    let failure: (() => Error) | null = null;
    let partial = '';
    const stop = (why: () => Error) => {
      if (failure) return;
      failure = why;
      clearTimeout(timer);
      killGroup(child.pid);
    };
    const onAbort = () => stop(() => abortError(signal, options.abortMessage));
    const timer = setTimeout(() => stop(options.onTimeout), options.timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      if (!failure) for (const line of lines) options.onStdoutLine(line);
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.add(chunk));
    const settle = (outcome: () => Error | ProcessResult) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      const value = outcome();
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    child.on('error', (err) => {
      // A child that never started has no 'close' to wait for.
      if (child.pid === undefined) settle(() => (options.onSpawnError ? options.onSpawnError(err) : err));
    });
    child.on('close', (code, exitSignal) => {
      if (partial && !failure) options.onStdoutLine(partial);
      settle(failure ?? (() => ({ code, signal: exitSignal, stdout: '', stderr: stderr.text() })));
    });
  });
}

/** SIGKILLs the group `pid` leads (the child and anything it started); a group already gone is fine. */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: it exited between our decision and the kill.
  }
}

/**
 * A long run (a render) outlives a process killed with -9 (out of memory, an operator): ffmpeg
 * ignores SIGPIPE, so the progress pipe nobody reads any more did not stop it, and it rendered on
 * for up to a minute beside the render that took the job over. Where util-linux's `setpriv` can
 * (Linux), the child is started through it with the parent-death signal set to SIGKILL: it dies
 * with this process. `setpriv` execs the binary, so the pid and its process group stay the
 * child's. A binary that cannot be run is started as it is, so its spawn error is the same.
 */
function diesWithUs(bin: string, args: readonly string[]): [string, readonly string[]] {
  if (!setprivWorks() || !executable(bin)) return [bin, args];
  return [SETPRIV, ['--pdeathsig', 'KILL', '--', bin, ...args]];
}

const SETPRIV = '/usr/bin/setpriv';
let setpriv: boolean | undefined;

/** Whether `setpriv --pdeathsig` runs here, asked once (util-linux 2.33 and later have it). */
function setprivWorks(): boolean {
  if (setpriv === undefined) {
    setpriv =
      process.platform === 'linux' &&
      executable(SETPRIV) &&
      spawnSync(SETPRIV, ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore', timeout: 5000 }).status === 0;
  }
  return setpriv;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
