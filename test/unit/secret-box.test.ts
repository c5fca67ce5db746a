import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSecretBox } from '../../lib/adapters/from-config';
import { createSecretBox } from '../../lib/adapters/system/secret-box';
import { generateWebhookSecret } from '../../lib/app/tokens';
import { loadConfig } from '../../lib/config';

describe('SecretBox (AES-256-GCM)', () => {
  const box = createSecretBox('k'.repeat(32));
  const secret = generateWebhookSecret();

  it('opens what it sealed, for the same drive only', () => {
    const sealed = box.seal(secret, 'drive-a');
    assert.match(sealed, /^sealed:v1:[0-9a-f]{8}:[A-Za-z0-9_-]+$/);
    assert.equal(box.open(sealed, 'drive-a'), secret);
    assert.throws(() => box.open(sealed, 'drive-b'), { code: 'internal_error', message: /secret of drive-b cannot be opened/ });
  });

  it('holds nothing of the secret, and seals it differently each time', () => {
    const [one, two] = [box.seal(secret, 'd'), box.seal(secret, 'd')];
    assert.notEqual(one, two);
    for (const sealed of [one, two]) assert.ok(!sealed.includes(secret.slice('whsec_'.length, 12)), sealed);
  });

  it('returns a plain secret stored before sealing existed as it is', () => {
    assert.equal(box.open(secret, 'd'), secret);
  });

  it('names both keys when a value was sealed with another one', () => {
    const other = createSecretBox('o'.repeat(32));
    assert.throws(() => other.open(box.seal(secret, 'd'), 'd'), {
      message: /sealed with key [0-9a-f]{8}, and this process has key [0-9a-f]{8}; SECRETS_KEY \(or DATA_DIR\/secrets\.key\)/,
    });
  });

  describe('its key from configuration', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'secret-box-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('makes DATA_DIR/secrets.key once, 0600 in a 0700 folder, and every process of the folder reads the same', () => {
      const dataDir = join(dir, 'data');
      const config = loadConfig({ DATA_DIR: dataDir });
      const sealed = openSecretBox(config).seal(secret, 'd');
      assert.equal(statSync(dataDir).mode & 0o777, 0o700);
      assert.equal(statSync(join(dataDir, 'secrets.key')).mode & 0o777, 0o600);
      const key = readFileSync(join(dataDir, 'secrets.key'), 'utf8');
      assert.equal(openSecretBox(config).open(sealed, 'd'), secret);
      assert.equal(readFileSync(join(dataDir, 'secrets.key'), 'utf8'), key);
    });

    it('takes SECRETS_KEY instead when it is set, and refuses a short one naming it', () => {
      const config = loadConfig({ DATA_DIR: dir, SECRETS_KEY: 's'.repeat(32) });
      assert.equal(createSecretBox('s'.repeat(32)).open(openSecretBox(config).seal(secret, 'd'), 'd'), secret);
      assert.throws(() => statSync(join(dir, 'secrets.key')), { code: 'ENOENT' });
      assert.throws(() => loadConfig({ SECRETS_KEY: 'short' }), /SECRETS_KEY: must be at least 32 characters/);
    });
  });
});
