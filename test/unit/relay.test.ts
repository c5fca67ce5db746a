import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import type { CheckpointStore, LogProducer } from '../../lib/ports/event-log';
import type { EventStore, StoredEvent } from '../../lib/ports/event-store';
import { createRelay } from '../../services/relay/relay';
import type { Relay } from '../../services/relay/relay';
import { waitFor } from '../fixtures/wait';

// ---- test doubles -------------------------------------------------------------------------

/** Records acknowledged batches in `journal` too, so ordering against checkpoint saves is visible. */
function recordingProducer(journal: string[]) {
  const state = { batches: [] as StoredEvent[][], attempts: 0, failNext: 0, gate: null as Promise<void> | null };
  const producer: LogProducer = {
    async publish(events) {
      state.attempts++;
      if (state.gate) await state.gate;
      if (state.failNext > 0) {
        state.failNext--;
        throw new Error('log unavailable');
      }
      state.batches.push([...events]);
      journal.push(`ack ${events[events.length - 1].position}`);
    },
    async close() {},
  };
  const delivered = () => state.batches.flat().map((e) => e.id);
  return { producer, state, delivered };
}

function memoryCheckpoints(journal: string[]): CheckpointStore & { saved: Map<string, string> } {
  const saved = new Map<string, string>();
  return {
    saved,
    async load(name) {
      return saved.get(name) ?? null;
    },
    async save(name, position) {
      journal.push(`save ${position}`);
      saved.set(name, position);
    },
  };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

// ---- scenarios ----------------------------------------------------------------------------

describe('relay: event store $all → event log', () => {
  const logger = pino({ level: 'silent' });
  let dir: string;
  let store: EventStore;
  let journal: string[];
  let checkpoints: ReturnType<typeof memoryCheckpoints>;
  const running: Relay[] = [];

  const appendEvents = async (stream: string, n: number): Promise<string[]> => {
    const events = Array.from({ length: n }, (_, i) => ({
      id: randomUUID(),
      type: 'Tested',
      data: { i },
      metadata: { partition_key: stream },
    }));
    const result = await store.append(stream, events, 'any');
    assert.equal(result.ok, true);
    return events.map((e) => e.id);
  };

  const startRelay = async (producer: LogProducer, options: { batchSize?: number } = {}) => {
    const relay = createRelay({ store, producer, checkpoints, logger, maxDelayMs: 10, retry: { initialMs: 5, maxMs: 20 }, ...options });
    running.push(relay);
    await relay.start();
    return relay;
  };

  const positionOf = async (id: string) => (await store.readAll(null, 1000)).find((e) => e.id === id)!.position;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-'));
    store = createSqliteEventStore({ path: join(dir, 'events.sqlite') });
    journal = [];
    checkpoints = memoryCheckpoints(journal);
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('publishes everything appended, before and after it started, in store order', async () => {
    const before = [...(await appendEvents('s-1', 3)), ...(await appendEvents('s-2', 2))];
    const log = recordingProducer(journal);
    await startRelay(log.producer, { batchSize: 4 });
    const after = [...(await appendEvents('s-1', 4)), ...(await appendEvents('s-3', 1))];

    await waitFor(() => log.delivered().length === 10, { what: 'all ten events published' });
    assert.deepEqual(log.delivered(), [...before, ...after]);
    assert.ok(log.state.batches.every((b) => b.length <= 4));
    const last = await positionOf(after[after.length - 1]);
    await waitFor(() => checkpoints.saved.get('relay') === last, { what: 'the checkpoint at the last event' });
  });

  it('saves the checkpoint only after the log acknowledged the batch', async () => {
    const ids = await appendEvents('s-1', 3);
    const log = recordingProducer(journal);
    const gate = deferred();
    log.state.gate = gate.promise;
    await startRelay(log.producer);

    try {
      await waitFor(() => log.state.attempts >= 1, { what: 'a publish in flight' });
      assert.equal(checkpoints.saved.size, 0, 'nothing saved while the publish is pending');
    } finally {
      gate.resolve(); // else stop() would wait for the held publish
    }
    const last = await positionOf(ids[2]);
    await waitFor(() => checkpoints.saved.get('relay') === last, { what: 'the checkpoint' });
    assert.deepEqual(journal, [`ack ${last}`, `save ${last}`]);
  });

  it('retries a failing publish with the same batch and neither loses nor skips an event', async () => {
    const ids = await appendEvents('s-1', 6);
    const log = recordingProducer(journal);
    log.state.failNext = 3;
    await startRelay(log.producer, { batchSize: 2 });

    await waitFor(() => log.delivered().length === 6, { what: 'all events after the failures' });
    assert.deepEqual(log.delivered(), ids);
    assert.equal(log.state.attempts, log.state.batches.length + 3);
    await waitFor(() => checkpoints.saved.get('relay') !== undefined && journal.length === 6);
    // Every save names the position of the batch acknowledged just before it.
    for (let i = 0; i < journal.length; i += 2) assert.equal(journal[i + 1], journal[i].replace('ack', 'save'));
  });

  it('resumes after the checkpoint when restarted, without re-publishing acknowledged batches', async () => {
    const first = await appendEvents('s-1', 4);
    const log1 = recordingProducer(journal);
    const relay1 = await startRelay(log1.producer, { batchSize: 2 });
    const lastFirst = await positionOf(first[3]);
    await waitFor(() => checkpoints.saved.get('relay') === lastFirst, { what: 'the first checkpoint' });
    await relay1.stop();

    const second = await appendEvents('s-2', 3);
    const log2 = recordingProducer(journal);
    await startRelay(log2.producer, { batchSize: 2 });
    await waitFor(() => log2.delivered().length === 3, { what: 'the new events' });
    assert.deepEqual(log2.delivered(), second);
  });

  it('stops while a publish keeps failing, saving no checkpoint, and a later start delivers it all', async () => {
    const ids = await appendEvents('s-1', 2);
    const failing = recordingProducer(journal);
    failing.state.failNext = Number.POSITIVE_INFINITY;
    const relay = await startRelay(failing.producer);
    await waitFor(() => failing.state.attempts >= 2, { what: 'retries' });
    await relay.stop();
    assert.equal(checkpoints.saved.size, 0);

    const healthy = recordingProducer(journal);
    await startRelay(healthy.producer);
    await waitFor(() => healthy.delivered().length === 2, { what: 'redelivery' });
    assert.deepEqual(healthy.delivered(), ids);
  });

  it('stops promptly while idle, having published and saved nothing', async () => {
    const log = recordingProducer(journal);
    const relay = await startRelay(log.producer);
    const started = Date.now();
    await relay.stop();
    assert.ok(Date.now() - started < 1000, 'stop does not wait for a poll interval or timer');
    assert.equal(log.state.attempts, 0);
    assert.equal(checkpoints.saved.size, 0);
  });
});
