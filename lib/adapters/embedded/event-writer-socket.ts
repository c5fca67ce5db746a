import { chmodSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppendRequest, BatchReply, FailureData } from './event-batch';
import type { EventWriter } from './event-writer';

/**
 * One writer per events file across processes: the process that owns the file (`serve`) has its
 * writer thread listen on a Unix socket, and the other processes of the same service send their
 * batches there rather than open a writer of their own (event-writer-thread.ts says why). The
 * socket lives in DATA_DIR (0700) and is itself 0600: only the service's user can append.
 *
 * The protocol is newline-delimited JSON, one message a line (JSON never holds a raw newline):
 * - `{"id":N,"batch":[AppendRequest…]}` is answered with `{"id":N,"reply":BatchReply}` once the
 *   batch is committed (or failed); replies may come in any order;
 * - `{"checkpoint":[group,position]}` saves a consumer checkpoint and is not answered.
 */

type Request = { readonly id: number; readonly batch: readonly AppendRequest[] } | { readonly checkpoint: readonly [string, number] };

export type WriterService = {
  commit(batch: readonly AppendRequest[]): Promise<BatchReply>;
  saveCheckpoint(group: string, position: number): void;
  /** A batch of another process appended at least one event. */
  onAppended(): void;
  onListening(): void;
  onListenFailed(err: Error): void;
};

/** Splits a stream of text into lines, handing each complete one to `onLine`. */
function lines(socket: Socket, onLine: (line: string) => void) {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let start = 0;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n', start)) {
      onLine(buffered.slice(start, end));
      start = end + 1;
    }
    buffered = buffered.slice(start);
  });
}

const appendedAny = (reply: BatchReply) => 'outcomes' in reply && reply.outcomes.some((o) => 'result' in o && o.result.ok);

/** In the writer thread: takes other processes' batches and checkpoints on `socketPath`. */
export function serveWriters(socketPath: string, service: WriterService): { close(): Promise<void> } {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // A peer that went away takes its answers with it; nothing here depends on them.
    socket.on('error', () => socket.destroy());
    lines(socket, (line) => {
      let request: Request;
      try {
        request = JSON.parse(line) as Request;
      } catch {
        socket.destroy(); // not a peer of ours
        return;
      }
      if ('checkpoint' in request) {
        try {
          service.saveCheckpoint(...request.checkpoint);
        } catch {
          // At worst the group redelivers from its previous checkpoint; its next save retries.
        }
        return;
      }
      void service.commit(request.batch).then((reply) => {
        if (appendedAny(reply)) service.onAppended();
        if (!socket.destroyed) socket.write(`${JSON.stringify({ id: request.id, reply })}\n`);
      });
    });
  });
  server.once('error', (err) => service.onListenFailed(err));
  void answers(socketPath).then((alive) => {
    // Another process is this file's writer (a second `npm start` on the same DATA_DIR): two
    // writers would take each other's workers, so this one does not start.
    if (alive) return service.onListenFailed(new Error(`another process is the writer of this events file (${socketPath} answers)`));
    // A socket left by a process that ended without closing it would refuse the bind.
    rmSync(socketPath, { force: true });
    server.listen(socketPath, () => {
      chmodSync(socketPath, 0o600);
      service.onListening();
    });
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** Whether a process listens on `socketPath` now. */
const answers = (socketPath: string) =>
  new Promise<boolean>((resolve) => {
    const probe = createConnection(socketPath);
    probe.once('connect', () => (probe.destroy(), resolve(true)));
    probe.once('error', () => resolve(false));
  });

/** How long a process waits for the writer to listen (it is started, or restarted, by `serve`). */
const CONNECT_ATTEMPTS = 50;
const CONNECT_RETRY_MS = 100;

/**
 * In another process: an EventWriter whose batches the file's one writer commits. A batch whose
 * answer is lost with the connection fails; it may have been committed (as with a database
 * connection lost after COMMIT was sent), and the caller's retry then finds its events there.
 */
export function socketWriter(socketPath: string): EventWriter & { saveCheckpoint(group: string, position: number): void } {
  const waiting = new Map<number, (reply: BatchReply) => void>();
  let nextId = 0;
  let connection: Promise<Socket> | null = null;
  let closed = false;

  const failAll = (failure: FailureData) => {
    for (const done of waiting.values()) done({ failure });
    waiting.clear();
  };

  const connect = async (): Promise<Socket> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await connectOnce();
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const writerNotUp = code === 'ENOENT' || code === 'ECONNREFUSED';
        if (!writerNotUp || attempt >= CONNECT_ATTEMPTS || closed) throw err;
        await sleep(CONNECT_RETRY_MS);
      }
    }
  };

  const connectOnce = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = createConnection(socketPath);
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        socket.on('error', () => undefined); // 'close' follows and says what matters
        socket.on('close', () => {
          connection = null;
          failAll({ message: `the connection to the event store's writer (${socketPath}) closed before the batch was answered` });
        });
        lines(socket, (line) => {
          let answer: { id: number; reply: BatchReply };
          try {
            answer = JSON.parse(line) as { id: number; reply: BatchReply };
          } catch {
            // Not our writer's answer: the batches in flight fail as the connection closes, never the process.
            socket.destroy();
            return;
          }
          const { id, reply } = answer;
          const done = waiting.get(id);
          waiting.delete(id);
          if (waiting.size === 0) socket.unref();
          done?.(reply);
        });
        resolve(socket);
      });
    });

  const send = async (message: Request) => {
    connection ??= connect().catch((err: unknown) => {
      connection = null;
      throw err;
    });
    const socket = await connection;
    socket.write(`${JSON.stringify(message)}\n`);
    return socket;
  };

  return {
    commit(batch) {
      if (closed) return Promise.resolve({ failure: { message: 'the event store is closed' } });
      const id = nextId++;
      return new Promise<BatchReply>((resolve) => {
        waiting.set(id, resolve);
        send({ id, batch }).then(
          (socket) => socket.ref(),
          (err: unknown) => {
            waiting.delete(id);
            resolve({ failure: { message: `the event store's writer cannot be reached at ${socketPath}: ${String(err)}` } });
          },
        );
      });
    },
    saveCheckpoint(group, position) {
      // Not awaited: a lost checkpoint only redelivers; the next save (200 ms later) carries the newer one.
      send({ checkpoint: [group, position] }).then(
        (socket) => {
          if (waiting.size === 0) socket.unref();
        },
        () => undefined,
      );
    },
    async close() {
      closed = true;
      const socket = await connection?.catch(() => null);
      if (!socket) return;
      // end() sends what is written first: the last checkpoints reach the writer.
      await new Promise<void>((resolve) => socket.end(resolve));
    },
  };
}
