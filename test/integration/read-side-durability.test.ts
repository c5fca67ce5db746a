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

/** The fsyncs the fixture made between its "opened" and "written" lines. */
function syncsWhileWriting(kind: 'read' | 'search', commits: number, flush: boolean): Syncs {
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
        flush ? 'flush' : 'no-flush',
      ],
      { stdio: 'ignore', timeout: 60_000 },
    );
    const lines = readFileSync(trace, 'utf8').split('\n');
    const from = lines.findIndex((l) => /write\(1<[^>]*>, "opened\\n"/.test(l));
    const to = lines.findIndex((l) => /write\(1<[^>]*>, "written\\n"/.test(l));
    assert.ok(from >= 0 && to > from, 'the fixture printed both lines');
    const syncs = lines.slice(from, to).filter((l) => /\b(fsync|fdatasync)\(/.test(l));
    return { total: syncs.length, wal: syncs.filter((l) => l.includes(`${file}-wal>`)).length };
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
      assert.deepEqual(syncsWhileWriting(kind, 40, false), { total: 0, wal: 0 });
    });

    it(`${what}: flush syncs its write-ahead log once, for every commit before it`, () => {
      assert.deepEqual(syncsWhileWriting(kind, 40, true), { total: 1, wal: 1 });
    });
  }
});
