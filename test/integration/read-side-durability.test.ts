import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasTool } from '../fixtures/tools';

/**
 * The read store and the search index acknowledge a commit before it is on the disk (WAL at
 * `synchronous = NORMAL`), and `flush()` makes everything committed so far durable with one fsync
 * (the projector flushes before its checkpoint moves: services/query-api/projector.ts). Counted
 * with strace on a real process writing real files; without strace this says so and skips.
 */

const FIXTURE = join(__dirname, '../fixtures/read-side-writes.ts');

type Syncs = { total: number; wal: number };
type Mode = 'flush' | 'no-flush' | 'checkpoints';

/** The fsyncs the fixture made between its "opened" and "written" lines (all threads). */
function syncsWhileWriting(kind: 'read' | 'search' | 'both', commits: number, mode: Mode): Syncs {
  const syncs = tracedWrites(kind, commits, mode).syncs;
  return { total: syncs.length, wal: syncs.filter((l) => l.file.endsWith('-wal')).length };
}

type Sync = { thread: number; file: string };

/** The fsyncs between the fixture's two lines, each with its thread and its file; `main`: the event loop's thread. */
function tracedWrites(kind: 'read' | 'search' | 'both', commits: number, mode: Mode, bytes = 0): { main: number; syncs: Sync[] } {
  const dir = mkdtempSync(join(tmpdir(), 'read-side-durability-'));
  try {
    const trace = join(dir, 'trace');
    const file = join(dir, `${kind}.sqlite`);
    execFileSync(
      'strace',
      [
        '-f',
        '-y',
        '-e',
        'trace=fsync,fdatasync,write',
        '-o',
        trace,
        process.execPath,
        '--require',
        'tsx/cjs',
        FIXTURE,
        kind,
        file,
        String(commits),
        mode,
        String(bytes),
      ],
      { stdio: 'ignore', timeout: 60_000 },
    );
    const lines = readFileSync(trace, 'utf8').split('\n');
    const from = lines.findIndex((l) => /write\(1<[^>]*>, "opened\\n"/.test(l));
    const to = lines.findIndex((l) => /write\(1<[^>]*>, "written\\n"/.test(l));
    assert.ok(from >= 0 && to > from, 'the fixture printed both lines');
    // With -f each line starts with its thread's id; the process's first line is its main thread's.
    const threadOf = (line: string) => Number(/^(\d+)/.exec(line)?.[1]);
    const syncs = lines
      .slice(from, to)
      .filter((l) => /\b(fsync|fdatasync)\(/.test(l))
      .map((l) => ({ thread: threadOf(l), file: /\((?:\d+)<([^>]*)>/.exec(l)?.[1] ?? '' }));
    return { main: threadOf(lines[0]), syncs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function canTrace(): boolean {
  try {
    execFileSync('strace', ['-o', '/dev/null', 'true'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

describe('read side durability (strace)', function () {
  this.timeout(120_000);

  before(function () {
    const why = !hasTool('strace') ? 'strace is not installed' : !canTrace() ? 'strace cannot trace here (ptrace refused)' : null;
    if (why) {
      console.log(`      ${why}: the fsync counts of the read store and the search index are skipped`);
      this.skip();
    }
  });

  for (const kind of ['read', 'search'] as const) {
    const what = kind === 'read' ? 'the read store' : 'the search index';

    it(`${what}: commits alone make no fsync, however many`, () => {
      assert.deepEqual(syncsWhileWriting(kind, 40, 'no-flush'), { total: 0, wal: 0 });
    });

    it(`${what}: flush syncs its write-ahead log once, for every commit before it`, () => {
      assert.deepEqual(syncsWhileWriting(kind, 40, 'flush'), { total: 1, wal: 1 });
    });

    it(`${what}: past a thousand WAL pages, the commits' thread never checkpoints; a thread of its own copies the WAL back`, () => {
      // 300 commits of ~16 KB: some 1,500 pages, past SQLite's own checkpoint at 1,000.
      const { main, syncs } = tracedWrites(kind, 300, 'checkpoints', 16_000);
      assert.deepEqual(
        syncs.filter((s) => s.thread === main),
        [],
        'no fsync on the event loop’s thread',
      );
      // A checkpoint ends with an fsync of the database file, which nothing else syncs.
      assert.ok(
        syncs.some((s) => s.file.endsWith(`${kind}.sqlite`)),
        `a checkpoint copied the WAL back into the database file: ${JSON.stringify(syncs)}`,
      );
    });
  }

  it('one checkpoint thread per process: the read store and the search index of a projector share it', () => {
    const { main, syncs } = tracedWrites('both', 300, 'checkpoints', 16_000);
    const databases = syncs.filter((s) => /\.sqlite(\.search)?$/.test(s.file));
    assert.deepEqual(
      new Set(databases.map((s) => s.file.replace(/.*\//, ''))),
      new Set(['both.sqlite', 'both.sqlite.search']),
      JSON.stringify(syncs),
    );
    const threads = new Set(databases.map((s) => s.thread));
    assert.equal(threads.size, 1, `one thread synced both files: ${JSON.stringify(syncs)}`);
    assert.ok(!threads.has(main));
  });
});
