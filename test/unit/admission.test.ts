import assert from 'node:assert/strict';
import pino from 'pino';
import { createSqliteReadStore } from '../../lib/adapters/embedded/read-store';
import { createAdmission } from '../../lib/app/admission';
import { JOB_INDEXES, JOBS } from '../../lib/read-models/jobs';
import type { ReadStore } from '../../lib/ports/read-store';

const log = pino({ level: 'silent' });

describe('admission control (unfinished jobs per drive)', () => {
  let store: ReadStore & { close(): Promise<void> };
  let clock: number;
  let counts: number;
  const job = (id: string, drive: string, state: string) => ({ _id: id, _rev: 0, job_id: id, drive_id: drive, job_state: state });
  const counting = () => ({
    count: (collection: string, filter: Parameters<ReadStore['count']>[1]) => {
      counts += 1;
      return store.count(collection, filter);
    },
  });
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  beforeEach(async () => {
    store = createSqliteReadStore({ path: ':memory:' });
    for (const fields of JOB_INDEXES) await store.ensureIndex(JOBS, fields);
    clock = 1_000_000;
    counts = 0;
  });
  afterEach(() => store.close());

  it('refuses a drive at its limit of queued and running jobs, counting neither finished jobs nor other drives', async () => {
    for (const [i, state] of ['queued', 'running', 'stopped', 'cancelled'].entries()) await store.put(JOBS, job(`d${i}`, 'd', state), null);
    await store.put(JOBS, job('e0', 'e', 'queued'), null);
    const admission = createAdmission({ queries: counting(), limit: 3, log, now: () => clock });
    assert.equal(await admission.refusal('d'), null, 'two unfinished of three');
    assert.deepEqual(await admission.refusal('d'), { unfinished: 3, limit: 3 }, 'the one just admitted counts at once');
    assert.equal(await admission.refusal('e'), null);
    assert.equal(counts, 2, 'one count per drive within the refresh');
    assert.deepEqual(admission.stats(), { refused: 1, drivesAtLimit: 1 });
  });

  it('reads the count again after the refresh interval, deciding on the last one meanwhile without waiting', async () => {
    await store.put(JOBS, job('a', 'd', 'queued'), null);
    await store.put(JOBS, job('b', 'd', 'running'), null);
    const admission = createAdmission({ queries: counting(), limit: 2, refreshMs: 1000, log, now: () => clock });
    assert.deepEqual(await admission.refusal('d'), { unfinished: 2, limit: 2 });
    await store.put(JOBS, { ...job('a', 'd', 'stopped'), _rev: 1 }, 0);
    clock += 999;
    assert.deepEqual(admission.refusal('d'), { unfinished: 2, limit: 2 }, 'within the interval: the count kept, answered at once');
    clock += 1;
    assert.deepEqual(admission.refusal('d'), { unfinished: 2, limit: 2 }, 'the read starts; this request is decided on the last count');
    await settle();
    assert.equal(admission.refusal('d'), null, 'the new count: one unfinished');
    assert.equal(counts, 2);
  });

  it('admits when the count cannot be read, and reads it again at the next interval', async () => {
    let failing = true;
    const queries = { count: async () => (failing ? Promise.reject(new Error('disk I/O error')) : 5) };
    const admission = createAdmission({ queries, limit: 5, refreshMs: 1000, log, now: () => clock });
    assert.equal(await admission.refusal('d'), null);
    failing = false;
    clock += 1000;
    assert.equal(admission.refusal('d'), null, 'decided on the count kept while the new one is read');
    await settle();
    assert.deepEqual(admission.refusal('d'), { unfinished: 6, limit: 5 }, 'the count read, plus the job admitted while it was read');
  });

  it('adds the jobs admitted while a count was read to it: they are not in it', async () => {
    const counts: ((n: number) => void)[] = [];
    const queries = { count: () => new Promise<number>((resolve) => counts.push(resolve)) };
    const admission = createAdmission({ queries, limit: 10, refreshMs: 1000, log, now: () => clock });
    const first = admission.refusal('d');
    counts.shift()!(0);
    assert.equal(await first, null);
    clock += 1000;
    for (let i = 0; i < 3; i++) assert.equal(admission.refusal('d'), null); // the first starts a read
    counts.shift()!(2); // the read saw two unfinished (the first job, and one admitted before it began)
    await settle();
    for (let i = 0; i < 5; i++) assert.equal(admission.refusal('d'), null);
    assert.deepEqual(admission.refusal('d'), { unfinished: 10, limit: 10 }, '2 counted + 3 admitted during the read + 5');
  });

  it('counts nothing with no limit (0)', async () => {
    const admission = createAdmission({ queries: counting(), limit: 0, log });
    for (let i = 0; i < 3; i++) assert.equal(admission.refusal('d'), null);
    assert.equal(counts, 0);
  });

  it('shares one read among the requests of a drive it has not counted yet', async () => {
    for (let i = 0; i < 4; i++) await store.put(JOBS, job(`j${i}`, 'd', 'queued'), null);
    const admission = createAdmission({ queries: counting(), limit: 6, log, now: () => clock });
    const answers = await Promise.all(Array.from({ length: 4 }, () => admission.refusal('d')));
    assert.deepEqual(answers, [null, null, { unfinished: 6, limit: 6 }, { unfinished: 6, limit: 6 }]);
    assert.equal(counts, 1);
  });
});
