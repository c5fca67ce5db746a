import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnOffLoop } from '../../lib/adapters/ffmpeg/spawner';
import { runProcess, type RunProcessOptions } from '../../lib/adapters/system/child-process';
import { isGone, waitFor } from '../fixtures/wait';

/**
 * The spawner thread (lib/adapters/ffmpeg/spawner.ts) keeps `runProcess`'s contract: the same
 * results, the caller's own errors for each way a run ends, and no child left running.
 */
describe('spawnOffLoop: runProcess from a thread of its own', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'spawner-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const node = process.execPath;
  const never = (what: string) => () => new Error(`unexpected: ${what}`);
  const base: RunProcessOptions = {
    timeoutMs: 10_000,
    onTimeout: never('timeout'),
    stdout: { maxBytes: 1 << 20, onTooMuch: never('too much output') },
    stderr: { keep: 'head', maxBytes: 1024 },
  };

  it('resolves what runProcess resolves: exit code, stdout and stderr, a failing exit included', async () => {
    const args = ['-e', `process.stdout.write('out'); process.stderr.write('oops'); process.exitCode = 3;`];
    assert.deepEqual(await spawnOffLoop(node, args, base), await runProcess(node, args, base));
    assert.deepEqual(await spawnOffLoop(node, args, base), { code: 3, signal: null, stdout: 'out', stderr: 'oops' });
  });

  it('gives each of 40 runs at once its own output', async () => {
    const runs = await Promise.all(Array.from({ length: 40 }, (_, i) => spawnOffLoop('sh', ['-c', `echo ${i}`], base)));
    assert.deepEqual(
      runs.map((r) => r.stdout),
      runs.map((_, i) => `${i}\n`),
    );
  });

  it("rejects with the caller's own errors: too much output, a binary that cannot start, the time limit", async () => {
    const tooMuch = new Error('too much');
    const small = { ...base, stdout: { maxBytes: 10, onTooMuch: () => tooMuch } };
    await assert.rejects(spawnOffLoop(node, ['-e', `process.stdout.write('x'.repeat(1000))`], small), (err) => err === tooMuch);
    const missing = (err: Error) =>
      Object.assign(new Error(`cannot start: ${err.message}`), { original: (err as NodeJS.ErrnoException).code });
    await assert.rejects(spawnOffLoop(join(dir, 'no-such-tool'), [], { ...base, onSpawnError: missing }), {
      message: /^cannot start: .*ENOENT/,
      original: 'ENOENT',
    });
    const late = new Error('late');
    await assert.rejects(spawnOffLoop('sleep', ['30'], { ...base, timeoutMs: 200, onTimeout: () => late }), (err) => err === late);
  });

  it("kills the child on abort and rejects with the signal's reason once it is killed", async () => {
    const pidFile = join(dir, 'pid');
    const script = `require('fs').writeFileSync(process.argv[1], String(process.pid)); setInterval(() => {}, 1000);`;
    const controller = new AbortController();
    const running = spawnOffLoop(node, ['-e', script, pidFile], { ...base, signal: controller.signal });
    const pid = await waitFor(() => Number(readFileSync(pidFile, 'utf8').trim()), { what: 'the pid file' });
    const reason = new Error('job cancelled');
    controller.abort(reason);
    await assert.rejects(running, (err) => err === reason);
    await waitFor(() => isGone(pid), { what: 'the child to exit' });
    // Already aborted: nothing starts.
    await assert.rejects(spawnOffLoop(node, ['-e', ''], { ...base, signal: controller.signal }), (err) => err === reason);
  });
});
