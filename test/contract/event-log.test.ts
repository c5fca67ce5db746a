import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createEmbeddedEventLog } from '../../lib/adapters/embedded/event-log';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { describeEventLogContract } from './event-log.contract';

const logger = pino({ level: 'silent' });

describeEventLogContract('embedded ($all of the SQLite store)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'log-'));
  const store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
  const log = createEmbeddedEventLog({ store, logger, retryBaseMs: 5 });
  return {
    log,
    async produce(key, types) {
      const stream = `test-${key}`;
      const existing = await store.readStream(stream);
      const events = types.map((type) => ({ id: randomUUID(), type, data: {}, metadata: { partition_key: key } }));
      await store.append(stream, events, existing.length === 0 ? 'no_stream' : existing.length - 1);
    },
    async cleanup() {
      await log.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
