import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSProtocolError, type Kafka, type Message } from 'kafkajs';
import pino from 'pino';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createAvroCodec, type EventCodec } from '../../lib/adapters/kafka/avro-codec';
import { createKafkaProducer } from '../../lib/adapters/kafka/producer';
import { AppError } from '../../lib/domain/errors';
import { EVENT_SCHEMA_DIR } from '../../lib/paths';
import type { DeadLetterStore } from '../../lib/ports/dead-letters';
import type { CheckpointStore, LogProducer } from '../../lib/ports/event-log';
import type { EventStore, StoredEvent } from '../../lib/ports/event-store';
import { createRelay } from '../../services/relay/relay';
import type { Relay } from '../../services/relay/relay';
import { createMemoryDeadLetterStore } from '../fixtures/memory-dead-letters';
import { waitFor } from '../fixtures/wait';

// ---- test doubles -------------------------------------------------------------------------

/**
 * Records acknowledged batches in `journal` too, so ordering against checkpoint saves is visible.
 * Like the Kafka producer, a batch holding an event `refuse` names is refused whole, for good.
 */
function recordingProducer(journal: string[]) {
  const state = {
    batches: [] as StoredEvent[][],
    attempts: 0,
    failNext: 0,
    gate: null as Promise<void> | null,
    refuse: (_e: StoredEvent): boolean => false,
  };
  const producer: LogProducer = {
    async publish(events) {
      state.attempts++;
      if (state.gate) await state.gate;
      if (state.failNext > 0) {
        state.failNext--;
        throw new Error('log unavailable');
      }
      const refused = events.find(state.refuse);
      if (refused) throw new AppError('unprocessable_entity', `event ${refused.type} ${refused.id} cannot be encoded: no schema`);
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

/** A dead-letter store whose first `failNext` puts fail, recording stored letters in `journal`. */
function flakyLetters(journal: string[]) {
  const inner = createMemoryDeadLetterStore();
  const state = { failNext: 0, puts: 0 };
  const store: DeadLetterStore = {
    ...inner,
    async put(letter) {
      state.puts++;
      if (state.failNext > 0) {
        state.failNext--;
        throw new Error('letters unavailable');
      }
      journal.push(`letter ${letter.position}`);
      return inner.put(letter);
    },
  };
  return { store, state };
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
  let letters: ReturnType<typeof flakyLetters>;
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
    const relay = createRelay({
      store,
      producer,
      checkpoints,
      deadLetters: letters.store,
      logger,
      maxDelayMs: 10,
      retry: { initialMs: 5, maxMs: 20 },
      retryPollMs: 20,
      ...options,
    });
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
    letters = flakyLetters(journal);
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

  // ---- poison never blocks ------------------------------------------------------------------

  it('sets aside an event the log refuses for good, publishes the rest of its batch in order, and moves on', async () => {
    const ids = await appendEvents('s-1', 5);
    const log = recordingProducer(journal);
    log.state.refuse = (e) => e.id === ids[2];
    await startRelay(log.producer, { batchSize: 5 });
    const last = await positionOf(ids[4]);
    await waitFor(() => checkpoints.saved.get('relay') === last, { what: 'the checkpoint past the refused event' });

    assert.deepEqual(log.delivered(), [ids[0], ids[1], ids[3], ids[4]]);
    const [letter, ...more] = await letters.store.list({ source: 'relay' });
    assert.equal(more.length, 0);
    assert.equal(letter.event_id, ids[2]);
    assert.equal(letter.event_type, 'Tested');
    assert.equal(letter.stream_id, 's-1');
    assert.equal(letter.position, await positionOf(ids[2]));
    assert.match(letter.reason, /cannot be encoded: no schema/);
    assert.equal(letter.payload_encoding, 'json');
    assert.equal((JSON.parse(letter.payload) as StoredEvent).id, ids[2]);
  });

  it('still retries a transient failure forever, in order, without dead-lettering anything', async () => {
    const ids = await appendEvents('s-1', 3);
    const log = recordingProducer(journal);
    log.state.failNext = 5;
    await startRelay(log.producer);
    await waitFor(() => log.delivered().length === 3, { what: 'the events once the log is back' });
    assert.deepEqual(log.delivered(), ids);
    assert.equal(letters.state.puts, 0);
  });

  it('keeps trying to store a dead letter, and saves no checkpoint past the event before it is stored', async () => {
    const ids = await appendEvents('s-1', 1);
    const log = recordingProducer(journal);
    log.state.refuse = () => true;
    letters.state.failNext = 2;
    await startRelay(log.producer);
    const position = await positionOf(ids[0]);
    await waitFor(() => checkpoints.saved.get('relay') === position, { what: 'the checkpoint' });
    assert.equal(letters.state.puts, 3);
    assert.deepEqual(journal, [`letter ${position}`, `save ${position}`]);
  });

  it('publishes a letter an operator marked for retry and removes it; one refused again goes back to dead', async () => {
    const ids = await appendEvents('s-1', 2);
    const log = recordingProducer(journal);
    log.state.refuse = () => true;
    await startRelay(log.producer);
    const both = await waitFor(async () => {
      const all = await letters.store.list({ source: 'relay' });
      return all.length === 2 ? all : null;
    });
    const fixed = both.find((l) => l.event_id === ids[0])!;
    const still = both.find((l) => l.event_id === ids[1])!;

    log.state.refuse = (e) => e.id === ids[1]; // say a schema for the first was deployed meanwhile
    assert.equal(await letters.store.markRetry(fixed.id), true);
    assert.equal(await letters.store.markRetry(still.id), true);
    await waitFor(async () => (await letters.store.get(fixed.id)) === null, { what: 'the fixed letter removed' });
    await waitFor(async () => (await letters.store.get(still.id))?.status === 'dead', { what: 'the other letter dead again' });
    assert.deepEqual(log.delivered(), [ids[0]]);
  });

  it('reports as lag the events it read and the log has not acknowledged yet', async () => {
    await appendEvents('s-1', 3);
    const log = recordingProducer(journal);
    const gate = deferred();
    log.state.gate = gate.promise;
    const relay = await startRelay(log.producer);
    try {
      await waitFor(() => relay.status().lag === 3, { what: 'three events in hand' });
      assert.equal(relay.status().running, true);
    } finally {
      gate.resolve();
    }
    await waitFor(() => relay.status().lag === 0, { what: 'no lag once acknowledged' });
    await relay.stop();
    assert.equal(relay.status().running, false);
  });
});

// ---- the Kafka producer's side of "poison never blocks" -------------------------------------

describe('Kafka producer: events the log can never take', () => {
  const logger = pino({ level: 'silent' });

  /** A kafkajs client whose producer records sends, and fails them as `fail` says. */
  function fakeKafka(fail: (messages: Message[]) => Error | null = () => null) {
    const sends: Message[][] = [];
    const producer = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      async send({ messages }: { messages: Message[] }) {
        const err = fail(messages);
        if (err) throw err;
        sends.push(messages);
        return [];
      },
    };
    return { kafka: { producer: () => producer } as unknown as Kafka, sends };
  }

  const jsonCodec: EventCodec = {
    encode(e) {
      if (e.type === 'Foreign') throw new Error(`no Avro schema for event type "${e.type}"`);
      return Buffer.from(JSON.stringify(e));
    },
    decode: (b) => JSON.parse(b.toString('utf8')) as StoredEvent,
  };

  let n = 0;
  const event = (type = 'Tested', data: Record<string, unknown> = {}): StoredEvent => ({
    id: randomUUID(),
    type,
    data,
    metadata: { partition_key: 'p-1' },
    streamId: 's-1',
    revision: n,
    position: String(++n),
    createdAt: '2024-05-01T10:00:00.000Z',
  });
  const refusal = (err: unknown) => err instanceof AppError && !err.retriable;
  const sentIds = (sends: Message[][]) => sends.flat().map((m) => JSON.parse(String(m.value)).id);

  it('refuses for good, before sending anything, a batch holding an event it cannot encode', async () => {
    const { kafka, sends } = fakeKafka();
    const producer = createKafkaProducer({ kafka, topic: 't', codec: jsonCodec, logger });
    await assert.rejects(
      producer.publish([event(), event('Foreign'), event()]),
      (err) => refusal(err) && /Foreign .*no Avro schema/.test(String(err)),
    );
    assert.equal(sends.length, 0);
  });

  it('refuses an event over maxMessageBytes, and splits a batch into sends under it, in order', async () => {
    const { kafka, sends } = fakeKafka();
    const producer = createKafkaProducer({ kafka, topic: 't', codec: jsonCodec, logger, maxMessageBytes: 1000 });
    await assert.rejects(
      producer.publish([event('Tested', { blob: 'x'.repeat(2000) })]),
      (err) => refusal(err) && /over the 1000-byte/.test(String(err)),
    );

    const batch = Array.from({ length: 6 }, () => event('Tested', { pad: 'y'.repeat(200) }));
    await producer.publish(batch);
    assert.ok(sends.length > 1, 'more than one send');
    assert.deepEqual(
      sentIds(sends),
      batch.map((e) => e.id),
    );
  });

  it("maps the broker's MESSAGE_TOO_LARGE, also wrapped by kafkajs's retrier, to a refusal", async () => {
    const tooLarge = () =>
      new KafkaJSProtocolError({ message: 'message too large', type: 'MESSAGE_TOO_LARGE', code: 10, retriable: false } as unknown as Error);
    for (const make of [tooLarge, () => Object.assign(new KafkaJSNonRetriableError(tooLarge()), { cause: tooLarge() })]) {
      const { kafka } = fakeKafka(() => make());
      const producer = createKafkaProducer({ kafka, topic: 't', codec: jsonCodec, logger });
      await assert.rejects(producer.publish([event()]), (err) => refusal(err) && /too large/.test(String(err)));
    }
  });

  it('leaves every other failure retriable (the broker is down)', async () => {
    const { kafka } = fakeKafka(() => new KafkaJSConnectionError('Connection error: ECONNREFUSED'));
    const producer = createKafkaProducer({ kafka, topic: 't', codec: jsonCodec, logger });
    await assert.rejects(producer.publish([event()]), (err) => err instanceof KafkaJSConnectionError);
  });

  it('with the Avro codec, refuses an event type that has no schema', async () => {
    const { kafka, sends } = fakeKafka();
    const producer = createKafkaProducer({ kafka, topic: 't', codec: createAvroCodec({ schemaDir: EVENT_SCHEMA_DIR }), logger });
    await assert.rejects(producer.publish([event('NoSuchEventTypeAnywhere')]), (err) => refusal(err) && /no Avro schema/.test(String(err)));
    assert.equal(sends.length, 0);
  });
});
