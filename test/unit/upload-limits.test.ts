import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFileLimit } from '../../lib/adapters/system/open-files';
import { loadConfig } from '../../lib/config';
import { defaultMaxConnections } from '../../lib/http/listen';
import { uploadLimits } from '../../services/command-api/upload-limits';

describe('upload and connection limits sized to the open-file limit (issue 19)', () => {
  it('reads the soft limit from /proc/self/limits, and none where it is unlimited or missing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'limits-'));
    const file = (soft: string) => {
      const path = join(dir, `limits-${soft}`);
      writeFileSync(
        path,
        `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                  4096                 files\n`,
      );
      return path;
    };
    assert.equal(openFileLimit(file('256')), 256);
    assert.equal(openFileLimit(file('unlimited')), null);
    assert.equal(openFileLimit(join(dir, 'none')), null);
  });

  it('gives connections half the descriptors, uploads a quarter, one drive half of those and at most 100', () => {
    assert.equal(defaultMaxConnections(256), 128);
    assert.equal(defaultMaxConnections(null), 1000);
    assert.deepEqual(uploadLimits({}, 256), { perProcess: 64, perDrive: 32, bytesPerDrive: 10 * 1024 ** 3, idleTimeoutMs: 30_000 });
    assert.deepEqual([uploadLimits({}, 1024).perProcess, uploadLimits({}, 1024).perDrive], [256, 100]);
    assert.deepEqual([uploadLimits({}, 1_000_000).perProcess, uploadLimits({}, null).perProcess], [1024, 256]);
  });

  it('takes the configured values over the derived ones', () => {
    const config = loadConfig({ UPLOADS_PER_PROCESS: '10', UPLOAD_IDLE_TIMEOUT: '1s', MAX_CONNECTIONS: '50' });
    assert.deepEqual(uploadLimits(config.uploadLimits, 4096), {
      perProcess: 10,
      perDrive: 5,
      bytesPerDrive: 10 * 1024 ** 3,
      idleTimeoutMs: 1000,
    });
    assert.equal(config.maxConnections, 50);
    assert.equal(loadConfig({ UPLOAD_IDLE_TIMEOUT: '500ms' }).uploadLimits.idleTimeoutMs, 500);
    assert.throws(() => loadConfig({ UPLOAD_IDLE_TIMEOUT: '0s' }), /UPLOAD_IDLE_TIMEOUT: must be longer than 0/);
    assert.throws(() => loadConfig({ UPLOADS_PER_DRIVE: '0' }), /UPLOADS_PER_DRIVE/);
  });
});
