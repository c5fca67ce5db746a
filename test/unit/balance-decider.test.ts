import assert from 'node:assert/strict';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createSqliteEventStore } from '../../lib/adapters/embedded/event-store';
import { createDrive, updateDrive } from '../../lib/app/admin';
import { createBalances } from '../../lib/app/balances';
import { balanceDecider, balanceSnapshot, left, type Allowances, type BalanceEvent } from '../../lib/domain/balance';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { readStoreSnapshots } from '../../lib/app/snapshots';
import pino from 'pino';
import { AppError } from '../../lib/domain/errors';
import { specFor } from '../fixtures/given';

const given = specFor(balanceDecider);
const T = '2026-11-24T10:00:00.000Z';
const DRIVE = '9c2e6b1a-0d4f-4e3a-8b7c-5a1d2f3e4b60';
const LIMITED: Allowances = { media_seconds: 100, ai_credits: 10 };
const ref = (id: string, kind: 'media_seconds' | 'ai_credits' = 'media_seconds', job = 'job-1') => ({
  drive_id: DRIVE,
  reservation_id: id,
  job_id: job,
  kind,
});
const reservedEvent = (
  id: string,
  amount: number,
  kind: 'media_seconds' | 'ai_credits' = 'media_seconds',
  job = 'job-1',
): BalanceEvent => ({
  type: 'BalanceReserved',
  data: { ...ref(id, kind, job), amount, reserved_at: T },
});
const reserve = (id: string, amount: number, kind: 'media_seconds' | 'ai_credits' = 'media_seconds') => ({
  type: 'Reserve' as const,
  driveId: DRIVE,
  reservationId: id,
  jobId: 'job-1',
  kind,
  amount,
  allowances: LIMITED,
  now: T,
});

describe('balance decider', () => {
  it('reserves what the balance can cover', () => {
    given(reservedEvent('a', 60))
      .when(reserve('b', 40))
      .then([reservedEvent('b', 40)]);
  });

  it('refuses a reservation that would take the balance below zero, counting what is reserved and what was used', () => {
    given(reservedEvent('a', 60)).when(reserve('b', 40.5)).thenRejects('payment_required', { state: 'insufficient_balance' });
    given(reservedEvent('a', 60), { type: 'ReservationSettled', data: { ...ref('a'), used: 50, settled_at: T } })
      .when(reserve('b', 50.5))
      .thenRejects('payment_required');
  });

  it('keeps the kinds apart, and an unlimited kind never refuses', () => {
    given(reservedEvent('a', 100))
      .when(reserve('b', 10, 'ai_credits'))
      .then([reservedEvent('b', 10, 'ai_credits')]);
    const unlimited = { ...reserve('b', 1e9), allowances: { media_seconds: null, ai_credits: 0 } };
    given(reservedEvent('a', 100))
      .when(unlimited)
      .then([reservedEvent('b', 1e9)]);
  });

  it('with atLeast, reserves what is left (in whole units) when less than asked, and refuses only below atLeast', () => {
    const upTo = (id: string, amount: number, atLeast: number) => ({ ...reserve(id, amount, 'ai_credits'), atLeast });
    given(reservedEvent('a', 3.5, 'ai_credits'))
      .when(upTo('b', 17, 2))
      .then([reservedEvent('b', 6, 'ai_credits')]);
    given(reservedEvent('a', 3, 'ai_credits'))
      .when(upTo('b', 5, 2))
      .then([reservedEvent('b', 5, 'ai_credits')]);
    given(reservedEvent('a', 9, 'ai_credits'))
      .when(upTo('b', 17, 2))
      .thenRejects('payment_required', { state: 'insufficient_balance' });
    given(reservedEvent('a', 8, 'ai_credits'))
      .when(upTo('b', 17, 2))
      .then([reservedEvent('b', 2, 'ai_credits')]);
  });

  it('takes nothing more when a retried attempt reserves again for the same work', () => {
    given(reservedEvent('a', 60)).when(reserve('a', 60)).then([]);
  });

  it('settles at what was used, frees the rest, and a second settlement is a no-op', () => {
    const settled: BalanceEvent = { type: 'ReservationSettled', data: { ...ref('a'), used: 42.5, settled_at: T } };
    given(reservedEvent('a', 60)).when({ type: 'Settle', reservationId: 'a', used: 42.5, now: T }).then([settled]);
    given(reservedEvent('a', 60), settled).when({ type: 'Settle', reservationId: 'a', used: 42.5, now: T }).then([]);
    const state = [reservedEvent('a', 60), settled].reduce(balanceDecider.evolve, balanceDecider.initialState());
    assert.equal(left(state, LIMITED, 'media_seconds'), 57.5);
  });

  it('refuses to settle more than was reserved', () => {
    given(reservedEvent('a', 60)).when({ type: 'Settle', reservationId: 'a', used: 61, now: T }).thenRejects('internal_error');
  });

  it('releases one reservation, or every one a job still holds when it ends', () => {
    given(reservedEvent('a', 60))
      .when({ type: 'Release', reservationId: 'a', reason: 'file refused', now: T })
      .then([{ type: 'ReservationReleased', data: { ...ref('a'), reason: 'file refused', released_at: T } }]);
    given(reservedEvent('a', 10), reservedEvent('b', 1, 'ai_credits'), reservedEvent('c', 5, 'media_seconds', 'job-2'))
      .when({ type: 'ReleaseJob', jobId: 'job-1', reason: 'cancelled', now: T })
      .then([
        { type: 'ReservationReleased', data: { ...ref('a'), reason: 'cancelled', released_at: T } },
        { type: 'ReservationReleased', data: { ...ref('b', 'ai_credits'), reason: 'cancelled', released_at: T } },
      ]);
    given().when({ type: 'ReleaseJob', jobId: 'job-1', reason: 'stopped', now: T }).then([]);
  });
});

describe('balance snapshots', () => {
  it('gives back the state it was made of, through JSON', () => {
    const state = [reservedEvent('a', 3), reservedEvent('b', 2, 'ai_credits', 'job-2'), reservedEvent('c', 1)].reduce(
      balanceDecider.evolve,
      balanceDecider.initialState(),
    );
    const settled = balanceDecider.evolve(state, {
      type: 'ReservationSettled',
      data: { ...ref('c'), amount: 1, used: 0.5, settled_at: T },
    } as BalanceEvent);
    const back = balanceSnapshot.decode(JSON.parse(JSON.stringify(balanceSnapshot.encode(settled))));
    assert.deepEqual(back, settled);
    assert.ok(back.open instanceof Map);
    assert.deepEqual([...back.open.keys()], ['a', 'b']);
  });
});

describe('balances on the event store', () => {
  for (const snapshotted of [false, true]) {
    it(`never goes below zero with 200 reservations at once from two processes, and settles exactly${snapshotted ? ', with snapshots every 25 events' : ''}`, async () => {
      const store = createSqliteEventStore({ path: ':memory:' });
      const read = createSqliteReadStore({ path: ':memory:' });
      try {
        const snapshots = snapshotted ? { snapshots: readStoreSnapshots(read, pino({ level: 'silent' })), snapshotEvery: 25 } : {};
        const deps = { store, clock: systemClock, ids: randomIds, ...snapshots };
        const drive = await createDrive(deps, { name: 'Metered', mediaSeconds: 150 });
        // Two instances: each takes its own commands one at a time, so they really conflict on the stream.
        const [a, b] = [createBalances(deps), createBalances(deps)];
        const granted: number[] = [];
        const amounts = Array.from({ length: 200 }, (_, i) => 1 + (i % 3) * 0.5);
        await Promise.all(
          amounts.map(async (amount, i) => {
            const balances = i % 2 ? a : b;
            const reservationId = `job-${i}:media_seconds:file.wav`;
            try {
              await balances.reserve({ driveId: drive.drive_id, reservationId, jobId: `job-${i}`, kind: 'media_seconds', amount });
            } catch (err) {
              assert.ok(err instanceof AppError && err.code === 'payment_required', String(err));
              return;
            }
            granted.push(amount);
            // Most use all of it, some a part, every fifth gives it back.
            if (i % 5 === 0) await balances.release(drive.drive_id, reservationId, 'failed');
            else await balances.settle(drive.drive_id, reservationId, i % 7 === 0 ? amount / 2 : amount);
          }),
        );
        const shown = (await a.show(drive.drive_id)).media_seconds;
        const events = await store.readStream(`balance-${drive.drive_id}`);
        const settled = events.filter((e) => e.type === 'ReservationSettled').reduce((n, e) => n + (e.data.used as number), 0);
        assert.ok(shown.left! >= 0, `left ${shown.left}`);
        assert.equal(shown.reserved, 0);
        assert.equal(shown.used, settled, 'used is the sum of the settlements');
        // At every event of the stream, used and reserved together stayed within the allowance.
        let state = balanceDecider.initialState();
        for (const e of events) {
          state = balanceDecider.evolve(state, { type: e.type, data: e.data } as BalanceEvent);
          assert.ok(left(state, { media_seconds: 150, ai_credits: 0 }, 'media_seconds')! >= -1e-9, `below zero at revision ${e.revision}`);
        }
        assert.ok(granted.length > 0 && granted.length < 200);
        // More granted to the drive: reservations go through again.
        await updateDrive(deps, drive.drive_id, { media_seconds: 1000 });
        await a.reserve({ driveId: drive.drive_id, reservationId: 'later', jobId: 'job-x', kind: 'media_seconds', amount: 100 });
        assert.equal((await b.show(drive.drive_id)).media_seconds.reserved, 100);
        // A process started now (a restart) reads the same balance, from the snapshot when there is one.
        const restarted = await createBalances(deps).show(drive.drive_id);
        assert.deepEqual(restarted, await a.show(drive.drive_id));
        if (snapshotted) assert.ok(await read.get('snapshots', `balance-${drive.drive_id}`), 'a snapshot was kept');
      } finally {
        await store.close();
        await read.close();
      }
    });
  }

  it('reserves, appends what comes between, settles and appends what comes after, in that order in one appendInOrder; refuses before appending', async () => {
    const store = createSqliteEventStore({ path: ':memory:' });
    try {
      const deps = { store, clock: systemClock, ids: randomIds };
      const drive = await createDrive(deps, { name: 'Metered', mediaSeconds: 10 });
      const balances = createBalances(deps);
      const note = (streamId: string, expected: number | 'no_stream', by: string) => ({
        streamId,
        expected,
        events: [{ id: randomIds.uuid(), type: 'Noted', data: { by }, metadata: { partition_key: 'k' } }],
      });
      const r = { driveId: drive.drive_id, reservationId: 'job-1:media_seconds:a.wav', jobId: 'job-1', kind: 'media_seconds' as const };
      const results = await balances.reserveAndSettle(
        { ...r, amount: 4, used: 3, reserve: true },
        [note('between-1', 'no_stream', 'add')],
        [note('after-1', 'no_stream', 'charge')],
      );
      assert.deepEqual(
        results.map((x) => x.ok),
        [true, true, true, true],
      );
      const order = (await store.readAll(null, 100)).map((e) => e.type).slice(-4);
      assert.deepEqual(order, ['BalanceReserved', 'Noted', 'ReservationSettled', 'Noted']);
      assert.deepEqual((await balances.show(drive.drive_id)).media_seconds, { allowance: 10, used: 3, reserved: 0, left: 7 });

      // Refused as reserve is, with nothing appended: not the reservation, not what comes between.
      const before = (await store.readAll(null, 100)).length;
      const tooMuch = { ...r, reservationId: 'job-1:media_seconds:b.wav', amount: 8, used: 8, reserve: true };
      await assert.rejects(balances.reserveAndSettle(tooMuch, [note('between-2', 'no_stream', 'add')], []), /not enough media seconds/);
      assert.equal((await store.readAll(null, 100)).length, before);

      // A conflict between: the reservation made stays; decided again without reserving, it settles.
      const c = { ...r, reservationId: 'job-1:media_seconds:c.wav', amount: 2, used: 2 };
      const conflicted = await balances.reserveAndSettle({ ...c, reserve: true }, [note('between-1', 'no_stream', 'taken')], []);
      assert.deepEqual(
        conflicted.map((x) => x.ok),
        [true, false],
      );
      assert.equal((await balances.show(drive.drive_id)).media_seconds.reserved, 2);
      const again = await balances.reserveAndSettle({ ...c, reserve: false }, [note('between-1', 0, 'add')], []);
      assert.deepEqual(
        again.map((x) => x.ok),
        [true, true],
      );
      assert.deepEqual((await balances.show(drive.drive_id)).media_seconds, { allowance: 10, used: 5, reserved: 0, left: 5 });

      // All or nothing: a conflict between leaves no reservation, nothing appended at all.
      const w = { ...r, reservationId: 'job-1:media_seconds:w.wav', amount: 2, used: 1, reserve: true };
      const count = (await store.readAll(null, 100)).length;
      const undone = await balances.reserveAndSettleWhole(
        w,
        [note('between-1', 'no_stream', 'taken')],
        [note('after-w', 'no_stream', 'x')],
      );
      assert.deepEqual(undone, { ok: false, index: 1, conflict: { expected: 'no_stream', actual: 1 } });
      assert.equal((await store.readAll(null, 100)).length, count);
      assert.deepEqual((await balances.show(drive.drive_id)).media_seconds, { allowance: 10, used: 5, reserved: 0, left: 5 });
      const whole = await balances.reserveAndSettleWhole(w, [note('between-1', 1, 'add')], [note('after-w', 'no_stream', 'x')]);
      assert.ok(whole?.ok && whole.results.length === 4);
      assert.deepEqual((await balances.show(drive.drive_id)).media_seconds, { allowance: 10, used: 6, reserved: 0, left: 4 });
      // A store that cannot append several streams as one (EventStoreDB): null, nothing appended.
      const single = createBalances({ ...deps, store: { ...store, appendAll: undefined } });
      assert.equal(await single.reserveAndSettleWhole({ ...w, reservationId: 'job-1:media_seconds:z.wav' }, [], []), null);
      assert.equal((await store.readAll(null, 100)).length, count + 4);
    } finally {
      await store.close();
    }
  });

  it('shows figures as people read them: to the millisecond, and nothing left (not below zero) under a lowered allowance', async () => {
    const store = createSqliteEventStore({ path: ':memory:' });
    try {
      const deps = { store, clock: systemClock, ids: randomIds };
      const drive = await createDrive(deps, { name: 'Lowered', mediaSeconds: 100 });
      const balances = createBalances(deps);
      for (const [i, seconds] of [0.1, 0.2, 2.153, 30.7].entries()) {
        const r = { driveId: drive.drive_id, reservationId: `r${i}`, jobId: 'job-1', kind: 'media_seconds' as const, amount: seconds };
        await balances.reserve(r);
        await balances.settle(drive.drive_id, `r${i}`, seconds);
      }
      assert.deepEqual((await balances.show(drive.drive_id)).media_seconds, { allowance: 100, used: 33.153, reserved: 0, left: 66.847 });
      await updateDrive(deps, drive.drive_id, { media_seconds: 20 });
      assert.deepEqual((await balances.show(drive.drive_id)).media_seconds, { allowance: 20, used: 33.153, reserved: 0, left: 0 });
    } finally {
      await store.close();
    }
  });
});
