import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { AppError } from '../../lib/domain/errors';
import type { NewEvent } from '../../lib/ports/event-store';

/**
 * Storage faults of the embedded stores: what clients see (a retriable 503 saying what is wrong,
 * never a server path), what the logs keep (path and SQLite code in the cause), and what an
 * operator reads when a file cannot be opened. Real faults where the machine allows them: a file
 * the service's user may not write, and a full file system (a tmpfs in a user namespace).
 */

const ROOT = join(__dirname, '..', '..');
const TSX = require.resolve('tsx/cjs');
const run = promisify(execFile);
const event = (data: Record<string, unknown> = {}): NewEvent => ({ id: randomUUID(), type: 'A', data, metadata: { partition_key: 'k' } });

const NOBODY = 65534;

/**
 * Why `uid` cannot read `paths` (a parent directory it may not enter, as a checkout under
 * `/root` or in a `mktemp -d` folder), or null when it can. Asked of a child running as that
 * user: root itself reads through any permission.
 */
async function unreadableFor(uid: number, paths: string[]): Promise<string | null> {
  const probe = `const fs = require('node:fs'); for (const p of ${JSON.stringify(paths)}) fs.accessSync(p, fs.constants.R_OK);`;
  return run(process.execPath, ['-e', probe], { cwd: '/', uid, gid: uid }).then(
    () => null,
    (err: { stderr?: string; message: string }) => /(E[A-Z]+: [^\n]*)/.exec(err.stderr ?? '')?.[1] ?? err.message.split('\n')[0],
  );
}

type Described = { code?: string; message?: string; status?: number; retriable?: boolean; cause?: string };

/** The client-facing error: `unavailable`, retriable, no path; the path and the SQLite code only in the cause. */
function assertUnavailable(err: unknown, message: string, path: string, sqliteCode?: string) {
  const e =
    err instanceof AppError
      ? { ...err, message: err.message, retriable: err.retriable, cause: (err.cause as Error)?.message }
      : (err as Described);
  assert.equal(e.code, 'unavailable', JSON.stringify(e));
  assert.equal(e.status, 503);
  assert.equal(e.retriable, true);
  assert.equal(e.message, message);
  assert.ok(!e.message!.includes('/'), `no path in "${e.message}"`);
  assert.ok(e.cause?.includes(path), `the cause names the file: ${e.cause}`);
  if (sqliteCode) assert.ok(e.cause?.includes(sqliteCode), `the cause has the SQLite code: ${e.cause}`);
}

/** For the child processes of the real-fault tests (CommonJS, TypeScript through tsx): an error as plain JSON, cause included. */
const DESCRIBE = `const describe = (e) => ({ code: e.code, message: e.message, status: e.status, retriable: e.retriable, cause: e.cause && e.cause.message });`;

describe('embedded stores: storage faults', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'faults-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function seeded() {
    const events = join(dir, 'events.sqlite');
    const read = join(dir, 'read.sqlite');
    const store = createSqliteEventStore({ path: events });
    await store.append('existing', [event()], 'no_stream');
    await store.close();
    const docs = createSqliteReadStore({ path: read });
    await docs.put('jobs', { _id: 'j1', _rev: 0 }, null);
    await docs.close();
    return { events, read };
  }

  describe('a store that cannot be written', () => {
    it('rejects appends and puts with unavailable naming the problem, and keeps reading', async () => {
      const paths = await seeded();
      const store = createSqliteEventStore({ path: paths.events, readonly: true });
      const docs = createSqliteReadStore({ path: paths.read, readonly: true });
      try {
        assert.equal((await store.readStream('existing')).length, 1);
        await store.append('new', [event()], 'no_stream').then(
          () => assert.fail('append succeeded'),
          (err) => assertUnavailable(err, 'the event store is read-only', paths.events, 'SQLITE_READONLY'),
        );
        assert.deepEqual(await docs.get('jobs', 'j1'), { _id: 'j1', _rev: 0 });
        await docs.put('jobs', { _id: 'j2', _rev: 0 }, null).then(
          () => assert.fail('put succeeded'),
          (err) => assertUnavailable(err, 'the read store is read-only', paths.read, 'SQLITE_READONLY'),
        );
      } finally {
        await store.close();
        await docs.close();
      }
    });

    it('makes probeWritable reject, where a healthy store passes it', async () => {
      const paths = await seeded();
      const healthy = [createSqliteEventStore({ path: paths.events }), createSqliteReadStore({ path: paths.read })] as const;
      await Promise.all(healthy.map((s) => s.probeWritable()));
      await Promise.all(healthy.map((s) => s.close()));
      const store = createSqliteEventStore({ path: paths.events, readonly: true });
      const docs = createSqliteReadStore({ path: paths.read, readonly: true });
      try {
        await assert.rejects(store.probeWritable(), (err) => (assertUnavailable(err, 'the event store is read-only', paths.events), true));
        await assert.rejects(docs.probeWritable(), (err) => (assertUnavailable(err, 'the read store is read-only', paths.read), true));
      } finally {
        await store.close();
        await docs.close();
      }
    });

    it('does the same for real when the service user may not write the files', async function () {
      const paths = await seeded();
      chmodSync(dir, 0o777); // SQLite may still create its -wal and -shm beside the files
      const asRoot = process.getuid?.() === 0;
      // Readable, not writable, by the child: the stores make their files 0600 (their owner's only).
      for (const p of [paths.events, paths.read]) chmodSync(p, asRoot ? 0o644 : 0o444);
      const script = `${DESCRIBE}
        const { createSqliteEventStore } = require('./lib/adapters/embedded/event-store');
        const { createSqliteReadStore } = require('./lib/adapters/embedded/read-store');
        (async () => {
          const store = createSqliteEventStore({ path: ${JSON.stringify(paths.events)} });
          const docs = createSqliteReadStore({ path: ${JSON.stringify(paths.read)} });
          const out = {
            read: (await store.readStream('existing')).length,
            append: await store.append('new', [{ id: 'e-new', type: 'A', data: {}, metadata: { partition_key: 'k' } }], 'no_stream').then(() => null, describe),
            probe: await store.probeWritable().then(() => null, describe),
            put: await docs.put('jobs', { _id: 'j2', _rev: 0 }, null).then(() => null, describe),
            readProbe: await docs.probeWritable().then(() => null, describe),
          };
          await store.close();
          await docs.close();
          console.log(JSON.stringify(out));
        })();`;
      // Root writes through any permission: run the child as nobody instead, if nobody can read the code.
      const unreadable = asRoot ? await unreadableFor(NOBODY, [TSX, join(ROOT, 'lib', 'adapters', 'embedded', 'event-store.ts')]) : null;
      if (unreadable) {
        console.log(`      skipped: the user nobody (uid ${NOBODY}) cannot read the code to run as it: ${unreadable}`);
        return this.skip();
      }
      const child = await run(process.execPath, ['--require', TSX, '-e', script], {
        cwd: ROOT,
        ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
      }).catch((err) => {
        if (asRoot && /EPERM|EACCES/.test(String(err))) return null;
        throw err;
      });
      if (!child) return this.skip();
      const out = JSON.parse(child.stdout);
      assert.equal(out.read, 1);
      assertUnavailable(out.append, 'the event store is read-only', paths.events, 'SQLITE_READONLY');
      assertUnavailable(out.probe, 'the event store is read-only', paths.events);
      assertUnavailable(out.put, 'the read store is read-only', paths.read, 'SQLITE_READONLY');
      assertUnavailable(out.readProbe, 'the read store is read-only', paths.read);
    });
  });

  describe('a full disk', () => {
    it('rejects a put that does not fit with unavailable: disk full', async () => {
      const docs = createSqliteReadStore({ path: join(dir, 'read.sqlite'), maxPageCount: 32 });
      try {
        await docs.put('jobs', { _id: 'big', _rev: 0, blob: 'x'.repeat(200_000) }, null).then(
          () => assert.fail('put succeeded'),
          (err) => assertUnavailable(err, 'the read store cannot write: disk full', join(dir, 'read.sqlite'), 'SQLITE_FULL'),
        );
        assert.equal(await docs.put('jobs', { _id: 'small', _rev: 0 }, null), 'written', 'the store goes on once a write fits');
      } finally {
        await docs.close();
      }
    });

    it('does the same for real on a full file system, and probeWritable reports it', async function () {
      const mountPoint = join(dir, 'tmpfs');
      mkdirSync(mountPoint);
      try {
        execFileSync('unshare', ['-rm', 'true'], { stdio: 'ignore' });
      } catch {
        console.log('      skipped: unshare -rm (a user namespace for a tmpfs) is not allowed here');
        return this.skip();
      }
      const path = join(mountPoint, 'events.sqlite');
      const script = `${DESCRIBE}
        const { createSqliteEventStore } = require('./lib/adapters/embedded/event-store');
        (async () => {
          const store = createSqliteEventStore({ path: ${JSON.stringify(path)} });
          const out = { probeBefore: await store.probeWritable().then(() => null, describe) };
          for (let i = 0; i < 2000 && !out.append; i++) {
            const events = [{ id: 'e' + i, type: 'A', data: { blob: 'x'.repeat(16000) }, metadata: { partition_key: 'k' } }];
            out.append = await store.append('s' + i, events, 'no_stream').then(() => null, describe);
          }
          out.probeAfter = await store.probeWritable().then(() => null, describe);
          out.read = (await store.readStream('s0')).length;
          await store.close();
          console.log(JSON.stringify(out));
        })();`;
      // A 4 MiB tmpfs, mounted in a private mount namespace that ends with the child.
      const mountThenRun = 'mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"';
      const { stdout } = await run(
        'unshare',
        ['-rm', 'sh', '-c', mountThenRun, mountPoint, process.execPath, '--require', TSX, '-e', script],
        {
          cwd: ROOT,
        },
      );
      const out = JSON.parse(stdout);
      assert.equal(out.probeBefore, null, 'an empty 4 MiB file system is writable');
      assertUnavailable(out.append, 'the event store cannot write: disk full', path, 'SQLITE_FULL');
      assertUnavailable(out.probeAfter, 'the event store cannot write: disk full', path);
      assert.equal(out.read, 1, 'reads go on');
    });
  });

  describe('a damaged file', () => {
    it('refuses to open a read store that is not a database, naming the file and the way out', () => {
      const path = join(dir, 'read.sqlite');
      writeFileSync(path, Buffer.alloc(8192, 'garbage!'));
      assert.throws(
        () => createSqliteReadStore({ path }),
        (err: Error) => (
          assert.equal(
            err.message,
            `${path} is not a readable SQLite database (file is not a database); move it away and run npm run replay to rebuild it`,
          ),
          true
        ),
      );
    });

    it('refuses to open an event store that is not a database, saying it must be restored from a backup', () => {
      const path = join(dir, 'events.sqlite');
      writeFileSync(path, 'not a database');
      assert.throws(
        () => createSqliteEventStore({ path }),
        (err: Error) => {
          assert.ok(err.message.startsWith(`${path} is not a readable SQLite database (file is not a database); `), err.message);
          assert.match(err.message, /source of truth .* restore it from a backup/);
          return true;
        },
      );
    });

    it('refuses to open a directory in place of the file', () => {
      const path = join(dir, 'events.sqlite');
      mkdirSync(path);
      assert.throws(
        () => createSqliteEventStore({ path }),
        (err: Error) => (assert.ok(err.message.startsWith(`${path} cannot be opened (unable to open database file): `), err.message), true),
      );
    });

    it('rejects reads of damaged pages with unavailable, which the cheap check at open does not read', async () => {
      const path = join(dir, 'events.sqlite');
      const store = createSqliteEventStore({ path });
      await Promise.all(Array.from({ length: 300 }, (_, i) => store.append(`s-${i}`, [event({ pad: 'x'.repeat(500) })], 'no_stream')));
      await store.close();
      const fd = openSync(path, 'r+');
      for (let page = 4; page < 10; page++) writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, page * 4096);
      closeSync(fd);
      const damaged = createSqliteEventStore({ path });
      try {
        await assert.rejects(
          damaged.readAll(null, 1000),
          (err) => (assertUnavailable(err, "the event store's file is damaged", path, 'SQLITE_CORRUPT'), true),
        );
      } finally {
        await damaged.close();
      }
    });
  });
});
