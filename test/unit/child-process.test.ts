import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess, streamProcess, type RunProcessOptions } from '../../lib/adapters/system/child-process';
import { hasEnded, isGone, waitFor } from '../fixtures/wait';

const node = process.execPath;
const never = (what: string) => () => new Error(`unexpected: ${what}`);
const base: RunProcessOptions = { timeoutMs: 10_000, onTimeout: never('timeout') };

describe('runProcess: one child, settled once, never left running', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'child-process-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A node child that writes its pid to a file, runs `then` and keeps running, so a test can see it die. */
  const hanging = (then = '') => {
    const pidFile = join(dir, `pid-${Math.random().toString(36).slice(2)}`);
    const script = `require('fs').writeFileSync(process.argv[1], String(process.pid)); ${then}; setInterval(() => {}, 1000);`;
    const pid = () => waitFor(() => Number(readFileSync(pidFile, 'utf8').trim()), { what: 'the pid file' });
    return { args: ['-e', script, pidFile], pid };
  };

  it('resolves on close with the exit code and all of stdout, a failing exit included', async () => {
    const script = `process.stdout.write('x'.repeat(1 << 20)); process.stderr.write('oops'); process.exitCode = 3;`;
    const result = await runProcess(node, ['-e', script], {
      ...base,
      stdout: { maxBytes: 2 << 20, onTooMuch: never('too much output') },
      stderr: { keep: 'head', maxBytes: 1024 },
    });
    assert.deepEqual({ ...result, stdout: result.stdout.length }, { code: 3, signal: null, stdout: 1 << 20, stderr: 'oops' });
  });

  it('waits for output written after the child exits, by a process that inherited its stdout', async () => {
    const stdout = { maxBytes: 1024, onTooMuch: never('too much output') };
    const result = await runProcess('sh', ['-c', '(sleep 0.2; echo late) & echo early'], { ...base, stdout });
    assert.equal(result.stdout, 'early\nlate\n');
  });

  it('discards the streams the caller does not ask for', async () => {
    const result = await runProcess('sh', ['-c', 'echo out; echo err >&2'], base);
    assert.deepEqual(result, { code: 0, signal: null, stdout: '', stderr: '' });
  });

  it('kills the child on timeout and rejects with the caller’s error', async () => {
    const { args, pid } = hanging();
    const running = runProcess(node, args, { timeoutMs: 500, onTimeout: () => new Error('too slow') });
    const childPid = await pid();
    await assert.rejects(running, /^Error: too slow$/);
    await waitFor(() => isGone(childPid), { what: 'the child to exit' });
  });

  it('kills the child within a second of an abort and rejects with the abort reason', async () => {
    const { args, pid } = hanging();
    const controller = new AbortController();
    const running = runProcess(node, args, { ...base, signal: controller.signal });
    const childPid = await pid();
    const aborted = Date.now();
    controller.abort(new Error('job cancelled'));
    await assert.rejects(running, /job cancelled/);
    await waitFor(() => isGone(childPid), { what: 'the child to exit', timeoutMs: 1000 });
    assert.ok(Date.now() - aborted < 1000, `took ${Date.now() - aborted} ms`);
  });

  it('rejects with an AbortError when the abort reason is not an Error', async () => {
    const { args, pid } = hanging();
    const controller = new AbortController();
    const running = runProcess(node, args, { ...base, signal: controller.signal, abortMessage: 'the probe was aborted' });
    const childPid = await pid();
    controller.abort('no reason given');
    await assert.rejects(running, { name: 'AbortError', message: 'the probe was aborted' });
    await waitFor(() => isGone(childPid), { what: 'the child to exit' });
  });

  it('starts nothing when the signal is already aborted', async () => {
    // A missing binary: had it been started, the run would reject with the spawn error instead.
    const reason = new Error('cancelled before');
    const signal = AbortSignal.abort(reason);
    await assert.rejects(runProcess(join(dir, 'no-such-tool'), [], { ...base, signal, onSpawnError: never('spawn') }), reason);
  });

  it('kills the child once stdout passes the cap, and runs each error factory at most once', async () => {
    const { args, pid } = hanging(`setInterval(() => process.stdout.write('y'.repeat(64 * 1024)), 1)`);
    let tooMuch = 0;
    let timeouts = 0;
    const controller = new AbortController();
    // Long enough for a node child to start on a loaded machine (at 300 ms, CI under load killed it before it wrote its pid).
    const timeoutMs = 3000;
    const running = runProcess(node, args, {
      timeoutMs,
      onTimeout: () => (timeouts++, new Error('timeout')),
      signal: controller.signal,
      stdout: { maxBytes: 1024 * 1024, onTooMuch: () => (tooMuch++, new Error('too much output')) },
    });
    const childPid = await pid();
    await assert.rejects(running, /too much output/);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'the abort listener is removed');
    await waitFor(() => isGone(childPid), { what: 'the child to exit' });
    // Not a guess: Node fires timers in deadline order, so the run's timer would have fired before this one.
    await new Promise((resolve) => setTimeout(resolve, timeoutMs));
    assert.deepEqual({ tooMuch, timeouts }, { tooMuch: 1, timeouts: 0 });
  });

  it('keeps the tail of stderr up to the cap', async () => {
    const script = `process.stderr.write('a'.repeat(100000)); process.stderr.write('\\nFATAL: the end');`;
    const { stderr } = await runProcess(node, ['-e', script], { ...base, stderr: { keep: 'tail', maxBytes: 100 } });
    assert.equal(stderr.length, 100);
    assert.ok(stderr.endsWith('a\nFATAL: the end'), stderr);
  });

  it('keeps the head of stderr up to the cap', async () => {
    const script = `process.stderr.write('first line\\n'); process.stderr.write('b'.repeat(100000));`;
    const { stderr } = await runProcess(node, ['-e', script], { ...base, stderr: { keep: 'head', maxBytes: 100 } });
    assert.equal(stderr, `first line\n${'b'.repeat(89)}`);
  });

  it('maps the spawn error of a missing binary, and passes it through unmapped by default', async () => {
    const missing = join(dir, 'no-such-tool');
    await assert.rejects(runProcess(missing, [], { ...base, onSpawnError: (err) => new Error(`cannot run the tool: ${err.message}`) }), {
      message: /^cannot run the tool: spawn .*no-such-tool ENOENT$/,
    });
    await assert.rejects(runProcess(missing, [], base), { code: 'ENOENT' });
  });
});

describe('streamProcess: stdout line by line as it comes, the process group killed on abort', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'stream-process-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('hands each line over while the child still runs, a last line without newline included', async () => {
    const seen: string[] = [];
    let sawFirstWhileRunning = false;
    const marker = join(dir, 'second-may-go');
    // The child waits for the test to see its first line before it writes the rest.
    const script = `const fs = require('fs'); process.stdout.write('one\\nt'); const t = setInterval(() => { if (fs.existsSync(process.argv[1])) { clearInterval(t); process.stdout.write('wo\\nthree'); } }, 10);`;
    const result = await streamProcess(node, ['-e', script, marker], {
      ...base,
      onStdoutLine: (line) => {
        seen.push(line);
        if (line === 'one') {
          sawFirstWhileRunning = true;
          writeFileSync(marker, '');
        }
      },
    });
    assert.ok(sawFirstWhileRunning);
    assert.deepEqual(seen, ['one', 'two', 'three']);
    assert.equal(result.code, 0);
  });

  it('on abort kills the child and what it started, and settles only once they are gone', async () => {
    const pidFile = join(dir, 'grandchild');
    const controller = new AbortController();
    // sh starts a grandchild in the same group and waits; both must die.
    const running = streamProcess('sh', ['-c', `sleep 30 & echo $! > ${pidFile}; echo started; wait`], {
      ...base,
      signal: controller.signal,
      onStdoutLine: (line) => line === 'started' && controller.abort(),
    });
    await assert.rejects(running, { name: 'AbortError' });
    const grandchild = Number(readFileSync(pidFile, 'utf8').trim());
    await waitFor(() => hasEnded(grandchild), { timeoutMs: 1000, what: 'the grandchild to die' });
  });

  it('rejects with the caller’s error on timeout, after killing the child', async () => {
    const running = streamProcess('sh', ['-c', 'echo $$; exec sleep 30'], {
      timeoutMs: 200,
      onTimeout: () => new Error('too slow'),
      onStdoutLine: () => undefined,
    });
    await assert.rejects(running, /too slow/);
  });

  it('maps a missing binary through onSpawnError', async () => {
    const running = streamProcess(join(dir, 'no-such-tool'), [], {
      ...base,
      onStdoutLine: () => undefined,
      onSpawnError: (err) => new Error(`cannot run: ${(err as NodeJS.ErrnoException).code}`),
    });
    await assert.rejects(running, /cannot run: ENOENT/);
  });
});
