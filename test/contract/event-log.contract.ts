import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { EventLog, LogHandler } from '../../lib/ports/event-log';
import type { StoredEvent, Subscription } from '../../lib/ports/event-store';
import { waitFor } from '../fixtures/wait';

/** One contract for every EventLog adapter (STYLE §11). */

export interface EventLogHarness {
  log: EventLog;
  /** Puts events of the given types into the log under partition key `key`, in order. */
  produce(key: string, types: string[]): Promise<void>;
  cleanup(): Promise<void>;
}

export interface EventLogContractOptions {
  before?: (this: Mocha.Context) => void;
  /** Whether a slow key can hold up another key (true where keys may share a partition). */
  keysMayShareALane?: boolean;
  timeoutMs?: number;
}

export function describeEventLogContract(name: string, factory: () => Promise<EventLogHarness>, options: EventLogContractOptions = {}) {
  describe(`EventLog contract: ${name}`, function () {
    this.timeout(options.timeoutMs ?? 20000);
    let h: EventLogHarness;
    let subs: Subscription[];
    let run: string;
    const wait = { timeoutMs: options.timeoutMs ?? 5000 };

    if (options.before) before(options.before);
    beforeEach(async () => {
      h = await factory();
      subs = [];
      run = randomUUID().slice(0, 8);
    });
    afterEach(async () => {
      await Promise.all(subs.map((s) => s.close()));
      await h?.cleanup();
    });

    const key = (k: string) => `${run}-${k}`;
    const mine = (e: StoredEvent) => String(e.metadata.partition_key).startsWith(run);
    const collect = async (group: string, into: StoredEvent[], handler?: LogHandler) => {
      const sub = await h.log.subscribe(
        `${group}-${run}`,
        async (e, ctx) => {
          if (!mine(e)) return;
          if (handler) await handler(e, ctx);
          into.push(e);
        },
        { concurrency: 4 },
      );
      subs.push(sub);
      return sub;
    };

    it('delivers every event to a group, in order within a key', async () => {
      const seen: StoredEvent[] = [];
      await collect('g', seen);
      await h.produce(key('a'), ['A1', 'A2', 'A3']);
      await h.produce(key('b'), ['B1', 'B2']);
      await waitFor(() => seen.length >= 5, { ...wait, what: '5 events' });
      const types = (k: string) => seen.filter((e) => e.metadata.partition_key === key(k)).map((e) => e.type);
      assert.deepEqual(types('a'), ['A1', 'A2', 'A3']);
      assert.deepEqual(types('b'), ['B1', 'B2']);
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
      await sub.close();
      subs = subs.filter((s) => s !== sub);
      await h.produce(key('a'), ['A3']);
      const second: StoredEvent[] = [];
      await collect('resume', second);
      await waitFor(() => second.some((e) => e.type === 'A3'), { ...wait, what: 'A3 after resubscribing' });
      assert.ok(!second.some((e) => e.type === 'A1'), 'an event handled before the restart is not delivered again');
    });

    if (!options.keysMayShareALane) {
      it('does not hold up other keys while one key is slow', async () => {
        const seen: StoredEvent[] = [];
        let release: () => void = () => undefined;
        const gate = new Promise<void>((r) => (release = r));
        await collect('slow', seen, async (e) => {
          if (e.type === 'SLOW') await gate;
        });
        await h.produce(key('slow'), ['SLOW']);
        // Pick a key that lands in another lane than the slow one: try a few.
        for (let i = 0; i < 8; i++) await h.produce(key(`fast${i}`), ['FAST']);
        try {
          await waitFor(() => seen.some((e) => e.type === 'FAST'), { ...wait, what: 'a fast key past the slow one' });
        } finally {
          release();
        }
        await waitFor(() => seen.some((e) => e.type === 'SLOW'), wait);
      });
    }
  });
}
