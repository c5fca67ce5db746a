import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setPriority } from 'node:os';
import type { Logger } from 'pino';

/**
 * A supervised child process (the all-in-one mode's job work and projections, DESIGN §1): if it
 * dies, however it dies, it is started again with back-off, and the parent (the HTTP APIs) keeps
 * answering throughout. The child says `{type: 'ready'}` once it consumes; the parent can ask it
 * questions (`request`) over the IPC channel, e.g. for its metrics.
 */

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'reply'; id: string; data: unknown }
  | { type: 'fatal'; message: string }
  /** The projector's watermark moved (a `$all` position as a decimal string): read-your-writes waits on it. */
  | { type: 'projected'; position: string };

export interface Supervised {
  /** True while a child is running and has said it is ready. */
  ready(): boolean;
  /** Asks the running child; rejects after `timeoutMs` or when there is no ready child. */
  request(question: string, timeoutMs?: number): Promise<unknown>;
  /**
   * Tells the child that events were appended here, so its consumers read them now instead of at
   * their next poll of the store (sent once per turn of the event loop however many appends).
   */
  appended(): void;
  /**
   * Tells the child where the projector (in another child) has got to, so that what it serves
   * (webhooks) waits on it too: the newest position, once per turn of the event loop.
   */
  projected(position: bigint): void;
  /** How many times the child was started (1 after the first start). */
  starts(): number;
  pid(): number | undefined;
  /** Stops the child gracefully (SIGTERM, then SIGKILL after `graceMs`) and does not restart it. */
  stop(graceMs?: number): Promise<void>;
}

export function supervise(options: {
  modulePath: string;
  /** Arguments of the child (its part, e.g. `projector`), so `ps` tells the children apart. */
  args?: string[];
  /** What logs call the child. */
  name?: string;
  /**
   * The child's scheduling priority (`nice`, 0 to 19): background work yields the CPU to the
   * APIs when both want it. Its own children (ffprobe, ffmpeg) inherit it.
   */
  nice?: number;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  execArgv?: string[];
  /** Told each time the child's projector moves its watermark. */
  onProjected?: (position: bigint) => void;
  minRestartDelayMs?: number;
  maxRestartDelayMs?: number;
}): Supervised {
  const log = options.logger.child({ component: 'supervisor', ...(options.name ? { child: options.name } : {}) });
  const minDelay = options.minRestartDelayMs ?? 250;
  const maxDelay = options.maxRestartDelayMs ?? 10_000;
  let child: ChildProcess | null = null;
  let isReady = false;
  let stopping = false;
  let starts = 0;
  let delay = minDelay;
  let restartTimer: NodeJS.Timeout | null = null;
  const pending = new Map<string, (data: unknown) => void>();
  // Over the IPC channel at most once per turn of the event loop, the newest value then.
  const sendAppended = latestPerTurn(() => child?.connected && child.send({ type: 'appended' }, () => undefined));
  const sendProjected = latestPerTurn(
    (position: bigint) => child?.connected && child.send({ type: 'projected', position: String(position) }, () => undefined),
  );

  const start = () => {
    starts++;
    const startedAt = Date.now();
    const c = fork(options.modulePath, options.args ?? [], {
      env: options.env,
      execArgv: options.execArgv ?? process.execArgv,
      stdio: 'inherit',
    });
    child = c;
    isReady = false;
    if (options.nice && c.pid !== undefined) {
      try {
        setPriority(c.pid, options.nice);
      } catch (err) {
        log.warn({ err, nice: options.nice }, 'could not lower the worker process priority');
      }
    }
    c.on('message', (m: ChildMessage) => {
      if (m?.type === 'ready') {
        isReady = true;
        log.info({ pid: c.pid, starts }, 'worker ready');
      } else if (m?.type === 'projected') options.onProjected?.(BigInt(m.position));
      else if (m?.type === 'reply') pending.get(m.id)?.(m.data);
      else if (m?.type === 'fatal') log.error({ pid: c.pid, reason: m.message }, 'worker reports it cannot go on');
    });
    c.on('error', (err) => log.error({ err }, 'worker process error'));
    c.on('exit', (code, signal) => {
      if (child === c) {
        child = null;
        isReady = false;
      }
      if (stopping) return;
      // A child that ran a while is healthy again: start over with a short delay.
      delay = Date.now() - startedAt > 60_000 ? minDelay : Math.min(maxDelay, delay * 2);
      log.error({ pid: c.pid, code, signal, restart_in_ms: delay }, 'worker exited; restarting it');
      restartTimer = setTimeout(start, delay);
    });
  };
  start();

  return {
    ready: () => isReady && child !== null,
    starts: () => starts,
    pid: () => child?.pid,
    projected: sendProjected,
    appended: () => sendAppended(undefined),
    request(question, timeoutMs = 2000) {
      const c = child;
      if (!c || !isReady || !c.connected) return Promise.reject(new Error('the worker process is not running'));
      const id = randomUUID();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => (pending.delete(id), reject(new Error('the worker process did not answer'))), timeoutMs);
        pending.set(id, (data) => (clearTimeout(timer), pending.delete(id), resolve(data)));
        c.send({ type: 'request', id, question }, (err) => err && (clearTimeout(timer), pending.delete(id), reject(err)));
      });
    },
    async stop(graceMs = 30_000) {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * The child's side: answers the parent's requests, and stops (through `onOrphaned`) when the
 * parent is gone, so a killed parent never leaves job work running on its own.
 */
export function serveParent(handlers: {
  answer(question: string): Promise<unknown>;
  onOrphaned(): void;
  onAppended?(): void;
  /** The projector, in another child, moved its watermark (see `Supervised.projected`). */
  onProjected?(position: bigint): void;
}) {
  if (!process.send) return { ready: () => undefined, fatal: () => undefined, projected: () => undefined };
  process.on('message', (m: { type?: string; id?: string; question?: string; position?: string }) => {
    if (m?.type === 'appended') return handlers.onAppended?.();
    if (m?.type === 'projected' && m.position !== undefined) return handlers.onProjected?.(BigInt(m.position));
    if (m?.type !== 'request' || !m.id) return;
    handlers.answer(m.question ?? '').then(
      (data) => process.send?.({ type: 'reply', id: m.id, data }),
      (err: unknown) => process.send?.({ type: 'reply', id: m.id, data: { error: String(err) } }),
    );
  });
  process.on('disconnect', handlers.onOrphaned);
  // The newest watermark, once per turn of the event loop.
  const sendProjected = latestPerTurn(
    (position: bigint) => process.connected && process.send?.({ type: 'projected', position: String(position) }),
  );
  return {
    ready: () => void process.send?.({ type: 'ready' }),
    fatal: (message: string) => void process.send?.({ type: 'fatal', message }),
    projected: sendProjected,
  };
}

/**
 * `send`, called at most once per turn of the event loop with the newest value given in it: a
 * watermark that moved a thousand times in one turn is one message.
 */
function latestPerTurn<T>(send: (value: T) => unknown): (value: T) => void {
  let pending: { value: T } | null = null;
  return (value) => {
    if (pending === null) {
      setImmediate(() => {
        const { value: newest } = pending!;
        pending = null;
        send(newest);
      });
    }
    pending = { value };
  };
}
