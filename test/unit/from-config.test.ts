import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
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

  it('never loads the clients of EventStoreDB, Kafka or MongoDB: an embedded service does not pay for them', async () => {
    // In a process of its own: this one has loaded them for other tests.
    const script = `
      const { openConsumerSide } = require('./lib/adapters/consumer-side');
      const { openRateLimiter } = require('./lib/adapters/from-config');
      const { loadConfig } = require('./lib/config');
      const { createMetrics } = require('./lib/observability/metrics');
      const pino = require('pino');
      (async () => {
        const config = loadConfig({ DATA_DIR: ${JSON.stringify(dir)} });
        const side = await openConsumerSide(config, pino({ level: 'silent' }), createMetrics());
        openRateLimiter(config, side.readSide.mongo);
        await side.close();
        const loaded = Object.keys(require.cache).filter((file) => /node_modules[\\/](mongodb|kafkajs|@eventstore)[\\/]/.test(file));
        process.stdout.write(JSON.stringify(loaded));
      })().catch((err) => { console.error(err); process.exit(1); });
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', script], {
      cwd: join(__dirname, '..', '..'),
    });
    assert.deepEqual(JSON.parse(stdout), []);
  });
});
