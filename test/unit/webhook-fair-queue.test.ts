import assert from 'node:assert/strict';
import { createSqliteReadStore, type SqliteReadStore } from '../../lib/adapters/embedded/read-store';
import type { Doc } from '../../lib/ports/read-store';
import { DELIVERIES, deliveriesModel, receivingHost } from '../../lib/read-models/deliveries';
import { createFairQueue, type FairLimits } from '../../services/webhook-dispatcher/fair-queue';

/** The dispatcher's fair queue over a real (in-memory SQLite) `deliveries` read model. */
describe('webhook fair queue', () => {
  const NOW = '2030-01-01T00:00:10.000Z';
  let read: SqliteReadStore;
  let n = 0;

  beforeEach(async () => {
    read = createSqliteReadStore({ path: ':memory:' });
    for (const fields of deliveriesModel.indexes) await read.ensureIndex(DELIVERIES, fields);
  });
  afterEach(() => read.close());

  /** A due delivery of `drive` to `url`, due `secondsAgo` before NOW; `claimedUntil` as the read model holds a claim. */
  async function due(drive: string, url: string, secondsAgo = 5, claimedUntil: string | null = null): Promise<string> {
    const id = `job-${String(++n).padStart(3, '0')}`;
    const dueAt = new Date(Date.parse(NOW) - secondsAgo * 1000).toISOString();
    const doc = { _id: id, _rev: 1, drive_id: drive, project_id: 'p', url, host: receivingHost(url), state: 'pending', due_at: dueAt };
    await read.put(DELIVERIES, { ...doc, claimed_until: claimedUntil }, null);
    return id;
  }

  /** Takes rows one round at a time, entering each, until a round gives none; the lanes in the order taken. */
  async function drain(limits: FairLimits, rounds = 1): Promise<Doc[]> {
    const queue = createFairQueue(read, limits);
    const taken: Doc[] = [];
    for (let r = 0; r < rounds; r++) {
      const round = queue.round(NOW);
      for (let doc = await round.next(); doc; doc = await round.next()) {
        queue.enter(doc);
        taken.push(doc);
      }
    }
    return taken;
  }
  const lanes = (docs: Doc[]) => docs.map((d) => `${String(d.drive_id)}@${String(d.host)}`);

  it('serves drives in turn, and within a drive its hosts in turn, oldest first', async () => {
    // Drive a's rows are all older than b's and c's: a queue by due_at would send them all first.
    for (let i = 0; i < 3; i++) await due('a', 'http://x.test/hook', 60 - i);
    for (let i = 0; i < 2; i++) await due('a', 'http://y.test:8443/hook', 50 - i);
    await due('b', 'http://x.test/other', 1);
    for (let i = 0; i < 2; i++) await due('c', 'https://z.test/hook', 2 - i);
    const taken = await drain({ concurrency: 100, perDrive: 100, perHost: 100 });
    assert.deepEqual(lanes(taken), ['a@x.test', 'b@x.test', 'c@z.test', 'a@y.test', 'c@z.test', 'a@x.test', 'a@y.test', 'a@x.test']);
    assert.deepEqual(
      taken.filter((d) => d.drive_id === 'a' && d.host === 'x.test').map((d) => d.due_at),
      [...taken.filter((d) => d.drive_id === 'a' && d.host === 'x.test').map((d) => String(d.due_at))].sort(),
      "a lane's oldest first",
    );
  });

  it('caps attempts per host name of a drive: the ports of one host are one host', async () => {
    for (let port = 1; port <= 8; port++) for (let i = 0; i < 5; i++) await due('hog', `http://127.0.0.1:${port}/hook`);
    const taken = await drain({ concurrency: 100, perDrive: 100, perHost: 4 }, 3);
    assert.deepEqual(lanes(taken), Array(4).fill('hog@127.0.0.1'));
  });

  it('caps attempts per drive and in all, and another drive on the same host name has its own slots', async () => {
    for (let port = 1; port <= 8; port++) for (let i = 0; i < 5; i++) await due('hog', `http://127.0.0.1:${port}/hook`);
    for (let i = 0; i < 5; i++) await due('hog', 'http://hog-two.test/hook');
    for (let i = 0; i < 3; i++) await due('fair', 'http://127.0.0.1:9/hook');
    for (let i = 0; i < 3; i++) await due('late', 'http://late.test/hook');
    const count = (taken: Doc[], drive: string) => taken.filter((d) => d.drive_id === drive).length;
    const nine = await drain({ concurrency: 9, perDrive: 5, perHost: 4 }, 3);
    assert.deepEqual(
      ['hog', 'fair', 'late'].map((drive) => count(nine, drive)),
      [3, 3, 3],
      'nine slots in all, taken in turns',
    );
    const twelve = await drain({ concurrency: 12, perDrive: 5, perHost: 4 }, 3);
    assert.deepEqual(
      ['hog', 'fair', 'late'].map((drive) => count(twelve, drive)),
      [5, 3, 3],
      'the hog stops at its per-drive cap',
    );
  });

  it('lets a lane whose receiver answered quickly go beyond its caps into idle slots, never into the last perDrive', async () => {
    for (let i = 0; i < 20; i++) await due('busy', 'http://fast.test/hook', 30 - i);
    for (let i = 0; i < 20; i++) await due('busy', 'http://slow.test/hook', 30 - i);
    for (let i = 0; i < 3; i++) await due('other', 'http://other.test/hook', 1);
    const limits = { concurrency: 16, perDrive: 4, perHost: 2 };
    const queue = createFairQueue(read, limits);
    const take = async () => {
      const taken: Doc[] = [];
      const round = queue.round(NOW);
      for (let doc = await round.next(); doc; doc = await round.next()) {
        queue.enter(doc);
        taken.push(doc);
      }
      return taken;
    };
    const count = (docs: Doc[]) =>
      Object.fromEntries(
        ['busy@fast.test', 'busy@slow.test', 'other@other.test'].map((l) => [l, lanes(docs).filter((x) => x === l).length]),
      );
    // Nothing is known of either lane yet: the caps hold.
    const first = await take();
    assert.deepEqual(count(first), { 'busy@fast.test': 2, 'busy@slow.test': 2, 'other@other.test': 2 });
    // fast.test answered quickly, slow.test did not (it timed out).
    for (const doc of first.filter((d) => d.drive_id === 'busy')) queue.leave(doc, doc.host === 'fast.test');
    // Beside other's 2: busy takes its 4 within the caps, and its fast lane borrows until 16 - 4 are in flight.
    const second = await take();
    assert.deepEqual(count(second), { 'busy@fast.test': 8, 'busy@slow.test': 2, 'other@other.test': 0 });
    assert.equal(queue.inFlight(), 12, `the last ${limits.perDrive} slots are left for lanes under their caps`);
    // Another drive under its caps still has the slots left.
    await due('late', 'http://late.test/hook', 1);
    assert.deepEqual(lanes(await take()), ['late@late.test']);
    // A lane whose attempts then were slow stops borrowing.
    for (const doc of second) queue.leave(doc, false);
    assert.deepEqual(count(await take()), { 'busy@fast.test': 2, 'busy@slow.test': 2, 'other@other.test': 0 });
  });

  it('leaves out rows held by a live claim, takes lapsed ones, and takes a row once per round even once left', async () => {
    await due('a', 'http://x.test/1', 5, '2030-01-01T00:01:00.000Z');
    const lapsed = await due('a', 'http://x.test/2', 5, '2030-01-01T00:00:01.000Z');
    await due('a', 'http://x.test/3', -5); // due in the future
    const queue = createFairQueue(read, { concurrency: 10, perDrive: 10, perHost: 10 });
    const round = queue.round(NOW);
    const first = await round.next();
    assert.equal(first?._id, lapsed);
    queue.enter(first!);
    queue.leave(first!); // a claim refused at once: the slot is free again at once
    assert.equal(await round.next(), null, 'not taken again in the same round');
    assert.equal((await queue.round(NOW).next())?._id, lapsed, 'the next round may try it again');
  });
});
