import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * `npm test` as root in a checkout under a directory others may not enter (`/root/…`, a
 * `mktemp -d` folder): the storage-faults test that runs a child as `nobody` must say why it
 * skips, and count as skipped, rather than fail on a module nobody can load.
 */

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);

describe('a checkout in a folder other users may not enter', function () {
  this.timeout(120_000);

  it('skips the test that needs another user, saying why, instead of failing', async function () {
    if (process.getuid?.() !== 0) {
      console.log('      skipped: only root runs a child as another user');
      return this.skip();
    }
    const hidden = mkdtempSync(join(tmpdir(), 'private-checkout-'));
    chmodSync(hidden, 0o700);
    try {
      const checkout = join(hidden, 'checkout');
      for (const part of ['lib', 'test', 'package.json', 'tsconfig.json', '.mocharc.json']) {
        cpSync(join(ROOT, part), join(checkout, part), { recursive: true });
      }
      symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(checkout, 'node_modules'));
      const mocha = join(checkout, 'node_modules', 'mocha', 'bin', 'mocha.js');
      const { stdout } = await run(
        process.execPath,
        [mocha, 'test/unit/storage-faults.test.ts', '-g', 'the service user may not write the files'],
        { cwd: checkout, env: { ...process.env, TEST_TIER: 'unit' } },
      ).catch((err: { stdout?: string; message: string }) => assert.fail(`the run failed:\n${err.stdout ?? err.message}`));
      assert.match(stdout, /skipped: the user nobody \(uid 65534\) cannot read the code to run as it: EACCES/);
      assert.match(stdout, /unit: 0 passed, 0 failed, 1 skipped/);
    } finally {
      rmSync(hidden, { recursive: true, force: true });
    }
  });
});
