import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { positionValue } from '../../lib/app/consistency';
import type { DeadLetter, DeadLetterStore } from '../../lib/ports/dead-letters';
import type { EventLog, HandlerOutcome, LogHandler, LogSubscription, SubscribeOptions } from '../../lib/ports/event-log';
import type { StoredEvent } from '../../lib/ports/event-store';
import { waitFor } from '../fixtures/wait';

/** One contract for every EventLog adapter (STYLE §11). */

export interface EventLogHarness {
  log: EventLog;
  /** The store the log sets poison aside in (the adapter's `deadLetters` dependency). */
  deadLetters: DeadLetterStore;
  /** Puts events of the given types into the log under partition key `key`, in order. */
  produce(key: string, types: string[]): Promise<void>;
  /** Puts a message the adapter cannot decode under `key`; only logs that carry raw bytes have one. */
  produceUndecodable?(key: string): Promise<void>;
  cleanup(): Promise<void>;
}

export interface EventLogContractOptions {
  before?: (this: Mocha.Context) => void | Promise<void>;
  after?: () => void | Promise<void>;
  /**
   * How many independent lanes keys are spread over (the subscription's lanes, or the topic's
   * partitions): a slow key may hold up the keys of its own lane, never the others. Default 4.
   */
  lanes?: number;
  timeoutMs?: number;
  /**
   * The watermark is known from the start (the embedded log reads the store's order). A log that
   * learns it from marks the relay writes (Kafka) knows none before the first mark.
   */
  watermarkFromMarks?: boolean;
}

/** Few enough for quick tests; the harness makes back-off and retry polling short. */
const MAX_ATTEMPTS = 3;

export function describeEventLogContract(name: string, factory: () => Promise<EventLogHarness>, options: EventLogContractOptions = {}) {
  describe(`EventLog contract: ${name}`, function () {
    this.timeout(options.timeoutMs ?? 20000);
    let h: EventLogHarness;
    let subs: LogSubscription[];
    let run: string;
    const wait = { timeoutMs: options.timeoutMs ?? 5000 };

    if (options.before) before(options.before);
    if (options.after) after(options.after);
    beforeEach(async () => {
      h = await factory();
      subs = [];
      run = randomUUID().slice(0, 8);
    });
    afterEach(async () => {
      // Also proves that close does not wait for a `settled` that never resolves.
      await Promise.all(subs.map((s) => s.close()));
      await h?.cleanup();
    });

    const key = (k: string) => `${run}-${k}`;
    const groupOf = (g: string) => `${g}-${run}`;
    const mine = (e: StoredEvent) => String(e.metadata.partition_key).startsWith(run);
    const typesOf = (seen: StoredEvent[], k: string) => seen.filter((e) => e.metadata.partition_key === key(k)).map((e) => e.type);
    const has = (seen: StoredEvent[], type: string) => seen.some((e) => e.type === type);
    const lettersOf = (g: string, where: (l: DeadLetter) => boolean = () => true) =>
      waitFor(
        async () => {
          const letters = (await h.deadLetters.list({ source: groupOf(g) })).filter(where);
          return letters.length > 0 ? letters : null;
        },
        { ...wait, what: `a dead letter of ${g}` },
      );

    /** Subscribes `group`; an event is recorded in `into` once the handler returned (or threw nothing). */
    const collect = async (group: string, into: StoredEvent[], handler?: LogHandler, subscribeOptions: SubscribeOptions = {}) => {
      const sub = await h.log.subscribe(
        groupOf(group),
        async (e, ctx): Promise<HandlerOutcome> => {
          if (!mine(e)) return;
          const outcome = handler ? await handler(e, ctx) : undefined;
          into.push(e);
          return outcome;
        },
        { concurrency: 4, maxAttempts: MAX_ATTEMPTS, ...subscribeOptions },
      );
      subs.push(sub);
      return sub;
    };
    const unsubscribe = async (sub: LogSubscription) => {
      await sub.close();
      subs = subs.filter((s) => s !== sub);
    };

    it('delivers every event to a group, in order within a key', async () => {
      const seen: StoredEvent[] = [];
      await collect('g', seen);
      await h.produce(key('a'), ['A1', 'A2', 'A3']);
      await h.produce(key('b'), ['B1', 'B2']);
      await waitFor(() => seen.length >= 5, { ...wait, what: '5 events' });
      assert.deepEqual(typesOf(seen, 'a'), ['A1', 'A2', 'A3']);
      assert.deepEqual(typesOf(seen, 'b'), ['B1', 'B2']);
      assert.ok(seen.every((e) => e.id && e.streamId && typeof e.revision === 'number' && e.createdAt));
    });

    it('delivers to each group independently', async () => {
      const one: StoredEvent[] = [];
      const two: StoredEvent[] = [];
      await collect('one', one);
      await collect('two', two);
      await h.produce(key('a'), ['A1', 'A2']);
      await waitFor(() => one.length >= 2 && two.length >= 2, { ...wait, what: 'both groups' });
    });

    it('retries a failing handler without skipping the event or reordering its key', async () => {
      const seen: StoredEvent[] = [];
      let failures = 0;
      await collect('retry', seen, async (e) => {
        if (e.type === 'A1' && failures < 2) {
          failures++;
          throw new Error('transient');
        }
      });
      await h.produce(key('a'), ['A1', 'A2']);
      await waitFor(() => seen.length >= 2, { ...wait, what: 'events after retries' });
      assert.equal(failures, 2);
      assert.deepEqual(
        seen.map((e) => e.type),
        ['A1', 'A2'],
      );
    });

    it('resumes a group after its last handled event when it subscribes again', async () => {
      const first: StoredEvent[] = [];
      const sub = await collect('resume', first);
      await h.produce(key('a'), ['A1', 'A2']);
      await waitFor(() => first.length >= 2, { ...wait, what: 'first batch' });
      await unsubscribe(sub);
      await h.produce(key('a'), ['A3']);
      const second: StoredEvent[] = [];
      await collect('resume', second);
      await waitFor(() => has(second, 'A3'), { ...wait, what: 'A3 after resubscribing' });
      assert.ok(!has(second, 'A1'), 'an event handled before the restart is not delivered again');
    });

    const slowKeyTest = (options.lanes ?? 4) >= 2 ? it : it.skip;
    slowKeyTest('does not hold up other keys while one key is slow', async () => {
      const seen: StoredEvent[] = [];
      let release: () => void = () => undefined;
      const gate = new Promise<void>((r) => (release = r));
      let slowStarted = false;
      await collect('slow', seen, async (e) => {
        if (e.type !== 'SLOW') return;
        slowStarted = true;
        await gate;
      });
      await h.produce(key('slow'), ['SLOW']);
      // Only once the slow handler is running may the fast keys arrive: they must pass it, not precede it.
      await waitFor(() => slowStarted, { ...wait, what: 'the slow handler running' });
      // Keys are hashed to lanes: with 8 keys, all sharing the slow one's lane is (1/lanes)^8.
      for (let i = 0; i < 8; i++) await h.produce(key(`fast${i}`), ['FAST']);
      try {
        await waitFor(() => has(seen, 'FAST'), { ...wait, what: 'a fast key past the slow one' });
      } finally {
        release();
      }
      await waitFor(() => has(seen, 'SLOW'), wait);
    });

    // ---------------------------------------------------------------- taken on, settled later

    it('goes on delivering while a taken-on event has not settled, on its key and on others', async () => {
      const seen: StoredEvent[] = [];
      const never = new Promise<void>(() => undefined);
      const sub = await collect('taken', seen, async (e) => (e.type === 'P1' ? { settled: never } : undefined));
      await h.produce(key('a'), ['P1', 'A2', 'A3']);
      await h.produce(key('b'), ['B1']);
      await waitFor(() => seen.length >= 4, { ...wait, what: 'the events after the unsettled one' });
      assert.deepEqual(typesOf(seen, 'a'), ['P1', 'A2', 'A3']);
      const status = sub.status();
      assert.equal(status.group, groupOf('taken'));
      assert.equal(status.running, true);
      assert.ok(status.lag === null || status.lag >= 0, `lag ${status.lag}`);
    });

    it('after resubscribing, delivers again an event that never settled, and not one that did', async () => {
      const first: StoredEvent[] = [];
      const sub = await collect('settle', first, async (e) => ({
        settled: e.type === 'DONE' ? Promise.resolve() : new Promise<void>(() => undefined),
      }));
      await h.produce(key('a'), ['DONE', 'OPEN']);
      await waitFor(() => first.length >= 2, { ...wait, what: 'both events taken on' });
      await unsubscribe(sub);

      const second: StoredEvent[] = [];
      await collect('settle', second);
      await waitFor(() => has(second, 'OPEN'), { ...wait, what: 'the unsettled event again' });
      assert.ok(!has(second, 'DONE'), 'an event whose settled resolved is not delivered again');
    });

    it('records a position only once beforeCheckpoint resolves: while it rejects, the group gets the events again', async () => {
      const first: StoredEvent[] = [];
      let calls = 0;
      const failing = await collect('durable', first, undefined, {
        beforeCheckpoint: async () => {
          calls++;
          throw new Error('the read store cannot sync');
        },
      });
      await h.produce(key('a'), ['A1', 'A2']);
      await waitFor(() => first.length >= 2, { ...wait, what: 'both events handled' });
      await waitFor(() => calls >= 1, { ...wait, what: 'a checkpoint tried' });
      await unsubscribe(failing);

      // Handled, but never made durable: a new member of the group starts before them.
      const second: StoredEvent[] = [];
      let handledAtFlush = -1;
      const synced = await collect('durable', second, undefined, {
        beforeCheckpoint: async () => {
          handledAtFlush = second.length;
        },
      });
      await waitFor(() => second.length >= 2, { ...wait, what: 'the events again' });
      assert.deepEqual(typesOf(second, 'a'), ['A1', 'A2']);
      await waitFor(() => handledAtFlush >= 2, { ...wait, what: 'a checkpoint after both events' });
      // And again for what comes after: each checkpoint is tried, not only the first.
      await h.produce(key('a'), ['A3']);
      await waitFor(() => handledAtFlush >= 3, { ...wait, what: 'a checkpoint after A3' });
      await unsubscribe(synced);

      await h.produce(key('a'), ['A4']);
      const third: StoredEvent[] = [];
      await collect('durable', third);
      await waitFor(() => has(third, 'A4'), { ...wait, what: 'A4' });
      assert.deepEqual(typesOf(third, 'a'), ['A4'], 'events checkpointed after beforeCheckpoint resolved are not delivered again');
    });

    it('tells a watermark listener the low-water mark on registration and each time it moves, never past an unsettled event', async function () {
      const seen: StoredEvent[] = [];
      let release: () => void = () => undefined;
      const gate = new Promise<void>((r) => (release = r));
      const sub = await collect('mark', seen, async (e) => (e.type === 'HELD' ? { settled: gate } : undefined));
      if (!sub.onWatermark) this.skip(); // a log that cannot tell store positions has none
      const marks: bigint[] = [];
      sub.onWatermark!((position) => marks.push(position));
      assert.equal(marks.length, options.watermarkFromMarks ? 0 : 1, 'the current mark, on registration, when one is known');
      await h.produce(key('a'), ['HELD']);
      await h.produce(key('b'), ['B1', 'B2']);
      await waitFor(() => seen.length >= 3, { ...wait, what: 'the events after the held one handled' });
      const at = (type: string) => positionValue(seen.find((e) => e.type === type)!.position);
      assert.ok(
        marks.every((m) => m < at('HELD')),
        `marks ${marks.join(', ')} stay before the unsettled event at ${at('HELD')}`,
      );
      release();
      await waitFor(() => marks.length > 0 && marks[marks.length - 1] >= at('B2'), { ...wait, what: 'the mark past every settled event' });
      assert.ok(
        marks.every((m, i) => i === 0 || m > marks[i - 1]),
        `marks ${marks.join(', ')} are told only when they move`,
      );
    });

    it('takes on at most maxInFlight unsettled events and goes on as they settle', async () => {
      const seen: StoredEvent[] = [];
      const releases: (() => void)[] = [];
      let unsettled = 0;
      let most = 0;
      await collect(
        'bounded',
        seen,
        async () => {
          most = Math.max(most, ++unsettled);
          return { settled: new Promise<void>((r) => releases.push(() => (unsettled--, r()))) };
        },
        { maxInFlight: 2 },
      );
      await h.produce(key('a'), ['A1', 'A2', 'A3', 'A4']);
      await waitFor(() => seen.length >= 2, { ...wait, what: 'the first two events' });
      for (let n = 3; n <= 4; n++) {
        releases.shift()!();
        await waitFor(() => seen.length >= n, { ...wait, what: `event ${n} once one settled` });
      }
      assert.ok(most <= 2, `${most} events were unsettled at once`);
      releases.forEach((release) => release());
    });

    it('calls the handler again when settled rejects, without holding up its key, and sets it aside after maxAttempts', async () => {
      const seen: StoredEvent[] = [];
      let calls = 0;
      await collect('rejects', seen, async (e) => {
        if (e.type !== 'JOB') return;
        calls++;
        return { settled: new Promise<void>((_, reject) => setTimeout(() => reject(new Error('job failed: disk full')), 5)) };
      });
      await h.produce(key('a'), ['JOB', 'A2']);
      await waitFor(() => has(seen, 'A2'), { ...wait, what: 'the event after the failing one' });
      const [letter] = await lettersOf('rejects', (l) => l.event_type === 'JOB');
      assert.equal(calls, MAX_ATTEMPTS);
      assert.equal(letter.attempts, MAX_ATTEMPTS);
      assert.match(letter.reason, /disk full/);
    });

    // ---------------------------------------------------------------- poison and dead letters

    it('sets aside an event whose handler keeps throwing after maxAttempts, and goes on', async () => {
      const seen: StoredEvent[] = [];
      let tries = 0;
      await collect('poison', seen, async (e) => {
        if (e.type !== 'BAD') return;
        tries++;
        throw new Error('poison: cannot handle');
      });
      await h.produce(key('a'), ['A1', 'BAD', 'A3']);
      await h.produce(key('b'), ['B1']);
      await waitFor(() => has(seen, 'A3') && has(seen, 'B1'), { ...wait, what: 'the events after the poison' });
      assert.deepEqual(typesOf(seen, 'a'), ['A1', 'A3']);
      assert.equal(tries, MAX_ATTEMPTS);

      const letters = await lettersOf('poison');
      assert.equal(letters.length, 1);
      const [letter] = letters;
      assert.equal(letter.event_type, 'BAD');
      assert.equal(letter.status, 'dead');
      assert.equal(letter.attempts, MAX_ATTEMPTS);
      assert.match(letter.reason, /poison: cannot handle/);
      assert.equal(letter.payload_encoding, 'json');
      assert.equal((JSON.parse(letter.payload) as StoredEvent).id, letter.event_id);
    });

    it('handles a dead letter marked for retry once the handler works, and removes the letter', async () => {
      const seen: StoredEvent[] = [];
      let broken = true;
      await collect('revive', seen, async (e) => {
        if (e.type === 'FIXME' && broken) throw new Error('not yet');
      });
      await h.produce(key('a'), ['FIXME', 'A2']);
      await waitFor(() => has(seen, 'A2'), { ...wait, what: 'the event after the failing one' });
      const [letter] = await lettersOf('revive');

      broken = false;
      assert.equal(await h.deadLetters.markRetry(letter.id), true);
      await waitFor(() => has(seen, 'FIXME'), { ...wait, what: 'the retried letter handled' });
      await waitFor(async () => (await h.deadLetters.get(letter.id)) === null, { ...wait, what: 'the letter removed' });
      assert.equal(seen.find((e) => e.type === 'FIXME')!.id, letter.event_id);
    });

    it('sets aside a message it cannot decode, with its raw bytes, and goes on', async function () {
      if (!h.produceUndecodable) this.skip();
      const seen: StoredEvent[] = [];
      await collect('undecodable', seen);
      await h.produceUndecodable!(key('a'));
      await h.produce(key('a'), ['A2']);
      await waitFor(() => has(seen, 'A2'), { ...wait, what: 'the event after the undecodable one' });
      const [letter] = await lettersOf('undecodable', (l) => l.payload_encoding === 'base64');
      assert.match(letter.position ?? '', /^\d+\/\d+$/, 'position is partition/offset');
      assert.ok(Buffer.from(letter.payload, 'base64').length > 0);
      assert.equal(letter.attempts, MAX_ATTEMPTS);
    });
  });
}
