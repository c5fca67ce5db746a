import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { CHARGE_TOTALS, CHARGES, chargesModel, chargeDocId } from '../../lib/app/balance';
import { projectEvent, rebuildModels } from '../../lib/app/read-models';
import { readTotal, settleTotal, writeFactOnce } from '../../lib/app/totals';
import type { StoredEvent } from '../../lib/ports/event-store';
import type { Doc, ReadStore } from '../../lib/ports/read-store';

/**
 * Running totals over facts (lib/app/totals.ts): the drive's media seconds used, kept beside its
 * charges so that a balance check reads one document. Each fact counts once whatever the
 * deliveries do: repeated, cut short after any write, or delivered twice at once.
 */

const DRIVE = 'd-1';
const charge = (job: string, ref: string, seconds: number, drive = DRIVE): Doc => ({
  _id: chargeDocId(job, ref),
  _rev: 0,
  job_id: job,
  ref,
  seconds,
  drive_id: drive,
});

/** `read`, whose `put`s fail from the `n`th on (`before`: that write is not made; `after`: it is, then the handler dies). */
function crashingAt(read: ReadStore, n: number, when: 'before' | 'after'): ReadStore {
  let puts = 0;
  return {
    ...read,
    async put(collection, doc, expectedRev) {
      puts += 1;
      if (puts >= n && when === 'before') throw new Error(`crash before write ${puts}`);
      const outcome = await read.put(collection, doc, expectedRev);
      if (puts >= n) throw new Error(`crash after write ${puts}`);
      return outcome;
    },
  };
}

describe('running totals over facts (charges per drive)', () => {
  let read: ReturnType<typeof createSqliteReadStore>;
  beforeEach(() => (read = createSqliteReadStore({ path: ':memory:' })));
  afterEach(() => read.close());

  it('adds a fact once however often it is delivered, and leaves nothing pending', async () => {
    const fact = charge('job-a', 'a.wav', 12.5);
    for (let i = 0; i < 3; i++) await writeFactOnce(read, CHARGES, CHARGE_TOTALS, fact);
    await writeFactOnce(read, CHARGES, CHARGE_TOTALS, charge('job-a', 'b.wav', 0.25));
    const total = await readTotal(read, CHARGE_TOTALS, DRIVE);
    assert.equal(total.value, 12.75);
    assert.deepEqual(total.pending, []);
    assert.equal((await readTotal(read, CHARGE_TOTALS, 'another drive')).value, 0);
  });

  for (const when of ['before', 'after'] as const) {
    for (const n of [1, 2, 3]) {
      it(`counts a fact once when its first delivery dies ${when} write ${n}, and the redelivery finishes it`, async () => {
        await writeFactOnce(read, CHARGES, CHARGE_TOTALS, charge('job-0', 'x.wav', 1));
        const fact = charge('job-a', 'a.wav', 7);
        await assert.rejects(writeFactOnce(crashingAt(read, n, when), CHARGES, CHARGE_TOTALS, fact), /crash/);
        await writeFactOnce(read, CHARGES, CHARGE_TOTALS, fact);
        const total = await readTotal(read, CHARGE_TOTALS, DRIVE);
        assert.equal(total.value, 8);
        assert.deepEqual(total.pending, []);
        assert.ok(await read.get(CHARGES, fact._id));
      });
    }
  }

  it('counts each fact once when duplicates are delivered at the same time as other facts of the drive', async () => {
    const facts = Array.from({ length: 20 }, (_, i) => charge(`job-${i}`, 'a.wav', i + 0.5));
    // Each fact three times, all at once: every write to the total races with the others.
    await Promise.all([...facts, ...facts, ...facts].map((f) => writeFactOnce(read, CHARGES, CHARGE_TOTALS, f)));
    const total = await readTotal(read, CHARGE_TOTALS, DRIVE);
    assert.equal(
      total.value,
      facts.reduce((n, f) => n + (f.seconds as number), 0),
    );
    assert.deepEqual(total.pending, []);
  });

  it('settles a total from its facts: those written, and those pending whose documents are not', async () => {
    await writeFactOnce(read, CHARGES, CHARGE_TOTALS, charge('job-a', 'a.wav', 5));
    // Facts a rebuild wrote without adding them.
    await read.putMany([
      { collection: CHARGES, doc: charge('job-b', 'a.wav', 3), expectedRev: null },
      { collection: CHARGES, doc: charge('job-c', 'a.wav', 1), expectedRev: null },
    ]);
    // A live delivery beside it, between adding its fact and writing it.
    await assert.rejects(writeFactOnce(crashingAt(read, 1, 'after'), CHARGES, CHARGE_TOTALS, charge('job-d', 'a.wav', 2)));
    assert.equal((await readTotal(read, CHARGE_TOTALS, DRIVE)).value, 7);
    await settleTotal(read, CHARGES, CHARGE_TOTALS, DRIVE, 50);
    const settled = await readTotal(read, CHARGE_TOTALS, DRIVE);
    assert.equal(settled.value, 11);
    assert.deepEqual(settled.pending, [[chargeDocId('job-d', 'a.wav'), 2]], 'still pending: its redelivery takes it off');
    // The redelivery finishes job-d without adding it again; settling again changes nothing.
    await writeFactOnce(read, CHARGES, CHARGE_TOTALS, charge('job-d', 'a.wav', 2));
    await settleTotal(read, CHARGES, CHARGE_TOTALS, DRIVE);
    assert.deepEqual(await readTotal(read, CHARGE_TOTALS, DRIVE), { value: 11, pending: [], rev: settled.rev! + 1 });
  });

  it('a rebuild beside a live projector ends with every charge counted once', async () => {
    const store = createSqliteEventStore({ path: ':memory:' });
    const chargeEvent = (i: number) => ({
      id: randomUUID(),
      type: 'MediaSecondsCharged',
      data: { job_id: `job-${i}`, ref: 'a.wav', seconds: 1 + (i % 3), drive_id: DRIVE, charged_at: '2026-01-01T00:00:00.000Z' },
      metadata: { partition_key: `job-${i}` },
    });
    try {
      for (let i = 0; i < 300; i++) await store.append(`job-job-${i}`, [chargeEvent(i)], 'any');
      for (const e of await store.readAll(null, 1000)) await projectEvent({ read, store }, [chargesModel], e);
      // The live projector: new charges appended and projected while the rebuild clears and rewrites.
      const live = (async () => {
        for (let i = 300; i < 360; i++) {
          await store.append(`job-job-${i}`, [chargeEvent(i)], 'any');
          const [stored] = await store.readStream(`job-job-${i}`);
          await projectEvent({ read, store }, [chargesModel], stored);
        }
      })();
      await Promise.all([rebuildModels({ read, store, batchSize: 50 }, [chargesModel]), live]);
      // Whatever the live projector did before the rebuild's last page, the rebuild saw too; the rest it added itself.
      const expected = Array.from({ length: 360 }, (_, i) => 1 + (i % 3)).reduce((a, b) => a + b, 0);
      const total = await readTotal(read, CHARGE_TOTALS, DRIVE);
      assert.equal(total.value, expected);
      assert.deepEqual(total.pending, []);
      assert.equal(await read.sum(CHARGES, { drive_id: DRIVE }, 'seconds'), expected);
    } finally {
      await store.close();
    }
  });

  it('a rebuild makes the totals from the events, and the balance the same as before', async () => {
    const charged = (job: string, ref: string, seconds: number, drive = DRIVE) => ({
      job,
      event: {
        id: randomUUID(),
        type: 'MediaSecondsCharged',
        data: { job_id: job, ref, seconds, drive_id: drive, at: '2026-01-01T00:00:00.000Z' },
        metadata: { partition_key: job },
      },
    });
    const charges = [charged('j1', 'a.wav', 1.5), charged('j1', 'b.wav', 2), charged('j2', 'a.wav', 4, 'd-2'), charged('j3', 'a.wav', 0.5)];
    const store = createSqliteEventStore({ path: ':memory:' });
    try {
      for (const c of charges) await store.append(`job-${c.job}`, [c.event], 'any');
      const stored: StoredEvent[] = await store.readAll(null, 100);
      for (const e of stored) await projectEvent({ read, store }, [chargesModel], e);
      assert.equal((await readTotal(read, CHARGE_TOTALS, DRIVE)).value, 4);
      // Wrong on purpose: the rebuild starts from nothing.
      await read.put(CHARGE_TOTALS.collection, { _id: DRIVE, _rev: 9, drive_id: DRIVE, seconds: 999, pending: [] }, 0);
      await rebuildModels({ read, store }, [chargesModel]);
      assert.equal((await readTotal(read, CHARGE_TOTALS, DRIVE)).value, 4);
      assert.equal((await readTotal(read, CHARGE_TOTALS, 'd-2')).value, 4);
    } finally {
      await store.close();
    }
  });
});
