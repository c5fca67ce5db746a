import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDeadLetters, openReadStore } from '../../lib/adapters/from-config';
import { loadConfig } from '../../lib/config';

describe('stores from configuration: embedded', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'from-config-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('opens and closes the read side and the dead letters, so that a service stops cleanly', async () => {
    const config = loadConfig({ DATA_DIR: dir });
    const readSide = await openReadStore(config);
    const deadLetters = openDeadLetters(config, readSide);
    assert.deepEqual(await deadLetters.list(), []);
    // It once called itself until the stack overflowed, and every service exited 1 on SIGTERM.
    await deadLetters.close();
    await readSide.close();
  });
});
