import assert from 'node:assert/strict';
import { findPage } from '../../lib/http/cursor';
import type { Doc, Filter, FindOptions, ReadStore } from '../../lib/ports/read-store';

/** What a factory hands the suite: a store on fresh, empty storage, and how to dispose of it. */
export interface ReadStoreSubject {
  readonly store: ReadStore;
  /** Closes every store the test opened (closing twice must be harmless) and drops the storage. */
  readonly cleanup: () => Promise<void>;
  /** Opens another store on the same storage; required when `persistent` is set. */
  readonly reopen?: () => Promise<ReadStore>;
}

export interface ReadStoreContractOptions {
  /** The adapter keeps documents across a close and reopen (a file, a server). */
  readonly persistent?: boolean;
}

const T1 = '2024-01-01T00:00:00.000Z';
const T2 = '2024-01-02T00:00:00.000Z';
const T3 = '2024-01-03T00:00:00.000Z';
const TRICKY = `O'Brien "Q" 100%_done\\; --`;

// Chosen so every operator has a near miss: a numeric string, a null beside a missing field, ties.
const PEOPLE: readonly Doc[] = [
  { _id: 'a', _rev: 1, drive_id: 'd1', name: 'Alice', age: 30, active: true, team: { name: 'red', size: 3 }, created_at: T1 },
  { _id: 'b', _rev: 1, drive_id: 'd1', name: 'bob', age: 25, active: false, team: { name: 'blue' }, created_at: T2, nickname: 'Bobby' },
  { _id: 'c', _rev: 1, drive_id: 'd1', name: TRICKY, age: 41.5, created_at: T2, nickname: null },
  { _id: 'd', _rev: 1, drive_id: 'd2', name: 'Dora', age: '30', team: { name: 'red' }, created_at: T3 },
];

const MATCHES: ReadonlyArray<readonly [string, Filter, readonly string[]]> = [
  ['an empty filter matches everything', {}, ['a', 'b', 'c', 'd']],
  ['string equality is exact, case included', { name: 'alice' }, []],
  ['a number never equals a numeric string', { age: 30 }, ['a']],
  ['a numeric string never equals a number', { age: '30' }, ['d']],
  ['booleans match booleans only', { active: false }, ['b']],
  ['dotted paths reach nested fields', { 'team.name': 'red' }, ['a', 'd']],
  ['a missing field equals null', { 'team.size': null }, ['b', 'c', 'd']],
  ['a missing parent equals null', { 'team.name': null }, ['c']],
  ['null matches stored null and missing alike', { nickname: null }, ['a', 'c', 'd']],
  ['$gt compares numbers, skipping strings and missing', { age: { $gt: 29 } }, ['a', 'c']],
  ['$gte and $lte together form a range', { age: { $gte: 25, $lte: 30 } }, ['a', 'b']],
  ['$lt orders ISO timestamps', { created_at: { $lt: T2 } }, ['a']],
  ['$lte includes the bound', { created_at: { $lte: T2 } }, ['a', 'b', 'c']],
  ['comparisons never match a missing field', { 'team.size': { $lt: 100 } }, ['a']],
  ['a string bound never matches numbers', { age: { $gte: '0' } }, ['d']],
  ['an operator given as undefined is left out', { created_at: { $gte: undefined, $lt: T2 } }, ['a']],
  ['$ne counts a missing field as different', { 'team.name': { $ne: 'red' } }, ['b', 'c']],
  ['$ne null means present and not null', { nickname: { $ne: null } }, ['b']],
  ['$in matches any listed value', { name: { $in: ['bob', 'Dora', 'nobody'] } }, ['b', 'd']],
  ['$in with null matches missing', { nickname: { $in: [null] } }, ['a', 'c', 'd']],
  ['$in of nothing matches nothing', { name: { $in: [] } }, []],
  ['$contains ignores case on both sides', { name: { $contains: 'aLI' } }, ['a']],
  ['$contains only matches strings', { age: { $contains: '3' } }, ['d']],
  ['$contains takes LIKE wildcards literally', { name: { $contains: '100%_d' } }, ['c']],
  ['$contains takes regex syntax literally', { name: { $contains: '.*' } }, []],
  ['quotes and backslashes in values are data', { name: TRICKY }, ['c']],
  ['SQL in values is data', { name: "x' OR '1'='1" }, []],
  ['several fields must all hold', { 'team.name': 'red', age: 30 }, ['a']],
  ['$or matches when any sub-filter does', { $or: [{ name: 'Alice' }, { age: { $lt: 26 } }] }, ['a', 'b']],
  [
    '$or beside fields must hold with them',
    { drive_id: 'd1', $or: [{ created_at: { $lt: T2 } }, { created_at: T2, _id: { $lt: 'c' } }] },
    ['a', 'b'],
  ],
];

const raw = (filter: object) => filter as Filter;
const REJECTED: ReadonlyArray<readonly [string, Filter]> = [
  ['an unknown operator', raw({ name: { $where: 'true' } })],
  ['a top-level operator other than $or', { $where: 'true' }],
  ['a field path that is not dotted identifiers', { "name') OR 1=1 --": 'x' }],
  ['an empty $or', { $or: [] }],
  ['an array as a value', raw({ tags: ['x'] })],
  ['an undefined field, which would otherwise match everything', raw({ drive_id: undefined })],
  ['a boolean bound', { age: { $gt: true } }],
];

const SORTS: ReadonlyArray<readonly [string, FindOptions, readonly string[]]> = [
  ['without sort, by _id', {}, ['a', 'b', 'c', 'd']],
  ['ascending puts missing first, ties by _id', { sort: [['team.size', 1]] }, ['b', 'c', 'd', 'a']],
  ['descending puts missing last, ties still by _id ascending', { sort: [['team.size', -1]] }, ['a', 'b', 'c', 'd']],
  [
    'several keys, mixed directions',
    {
      sort: [
        ['team.name', 1],
        ['created_at', -1],
      ],
    },
    ['c', 'b', 'd', 'a'],
  ],
  ['strings by code point (upper case first)', { sort: [['name', 1]] }, ['a', 'd', 'c', 'b']],
  ['limit keeps the first documents of the order', { sort: [['name', 1]], limit: 2 }, ['a', 'd']],
  ['limit 0 returns nothing', { limit: 0 }, []],
];

const ids = (docs: readonly Doc[]) => docs.map((d) => d._id);

export function describeReadStoreContract(
  name: string,
  factory: () => Promise<ReadStoreSubject>,
  options: ReadStoreContractOptions = {},
): void {
  describe(`ReadStore contract: ${name}`, function () {
    let subject: ReadStoreSubject;
    let store: ReadStore;
    beforeEach(async () => {
      subject = await factory();
      store = subject.store;
    });
    afterEach(async () => subject.cleanup());

    describe('get and put', function () {
      const doc: Doc = { _id: 'p1', _rev: 0, name: 'First', meta: { tags: ['x', 'y'], note: null, when: T1 }, title: 'Ünïcødé ✓' };

      it('returns null for a missing document', async () => {
        assert.equal(await store.get('projects', 'nope'), null);
      });

      it('creates with expectedRev null and returns the document as stored', async () => {
        assert.equal(await store.put('projects', doc, null), 'written');
        assert.deepEqual(await store.get('projects', 'p1'), doc);
      });

      it('answers the document as JSON text with getJson, and null for a missing one', async () => {
        await store.put('projects', doc, null);
        assert.deepEqual(JSON.parse((await store.getJson('projects', 'p1')) ?? 'null'), doc);
        assert.equal(await store.getJson('projects', 'nope'), null);
      });

      it('flushes: what was written before reads the same after, and writes go on', async () => {
        await store.put('projects', doc, null);
        await store.flush();
        assert.deepEqual(await store.get('projects', 'p1'), doc);
        assert.equal(await store.put('projects', { ...doc, _rev: 1, name: 'After' }, 0), 'written');
        await store.flush();
        assert.equal((await store.get('projects', 'p1'))?.name, 'After');
      });

      it('drops undefined fields, as JSON does', async () => {
        await store.put('projects', { _id: 'u', _rev: 0, gone: undefined }, null);
        assert.deepEqual(await store.get('projects', 'u'), { _id: 'u', _rev: 0 });
      });

      it('is stale when creating a document that exists', async () => {
        await store.put('projects', doc, null);
        assert.equal(await store.put('projects', { ...doc, name: 'Second' }, null), 'stale');
        assert.deepEqual(await store.get('projects', 'p1'), doc);
      });

      it('replaces when expectedRev is the stored revision', async () => {
        await store.put('projects', doc, null);
        const next = { _id: 'p1', _rev: 1, name: 'Renamed' };
        assert.equal(await store.put('projects', next, 0), 'written');
        assert.deepEqual(await store.get('projects', 'p1'), next);
      });

      it('is stale with another revision, and changes nothing', async () => {
        await store.put('projects', doc, null);
        assert.equal(await store.put('projects', { ...doc, _rev: 2, name: 'Lost' }, 1), 'stale');
        assert.deepEqual(await store.get('projects', 'p1'), doc);
      });

      it('is stale with a revision for a document that does not exist', async () => {
        assert.equal(await store.put('projects', doc, 0), 'stale');
        assert.equal(await store.get('projects', 'p1'), null);
      });

      it('lets exactly one of two racing writers of the same revision win', async () => {
        await store.put('projects', doc, null);
        const outcomes = await Promise.all(['A', 'B'].map((n) => store.put('projects', { ...doc, _rev: 1, name: n }, 0)));
        assert.deepEqual([...outcomes].sort(), ['stale', 'written']);
      });
    });

    describe('getMany, putMany, sum and count', function () {
      it('reads the documents that exist among the ids asked for', async () => {
        await store.put('projects', { _id: 'a', _rev: 0 }, null);
        await store.put('projects', { _id: 'b', _rev: 0 }, null);
        const found = await store.getMany('projects', ['a', 'b', 'missing']);
        assert.deepEqual(found.map((d) => d._id).sort(), ['a', 'b']);
        assert.deepEqual(await store.getMany('projects', []), []);
      });

      it('writes several documents with their own compare-and-set, outcomes in order', async () => {
        await store.put('projects', { _id: 'a', _rev: 0, n: 1 }, null);
        const outcomes = await store.putMany([
          { collection: 'projects', doc: { _id: 'a', _rev: 1, n: 2 }, expectedRev: 0 },
          { collection: 'projects', doc: { _id: 'b', _rev: 0, n: 1 }, expectedRev: null },
          { collection: 'projects', doc: { _id: 'c', _rev: 3, n: 1 }, expectedRev: 2 },
        ]);
        assert.deepEqual(outcomes, ['written', 'written', 'stale']);
        assert.deepEqual(await store.get('projects', 'a'), { _id: 'a', _rev: 1, n: 2 });
        assert.equal(await store.get('projects', 'c'), null);
      });

      it('writes to several collections at once, each write with its own compare-and-set, outcomes in order', async () => {
        await store.put('jobs', { _id: 'a', _rev: 0, n: 1 }, null);
        const outcomes = await store.putMany([
          { collection: 'jobs', doc: { _id: 'a', _rev: 1, n: 2 }, expectedRev: 0 },
          { collection: 'projects', doc: { _id: 'a', _rev: 0, n: 9 }, expectedRev: null },
          { collection: 'projects', doc: { _id: 'b', _rev: 3, n: 1 }, expectedRev: 2 },
          { collection: 'jobs', doc: { _id: 'a', _rev: 2, n: 3 }, expectedRev: 0 },
        ]);
        assert.deepEqual(outcomes, ['written', 'written', 'stale', 'stale']);
        assert.deepEqual(await store.get('jobs', 'a'), { _id: 'a', _rev: 1, n: 2 });
        assert.deepEqual(await store.get('projects', 'a'), { _id: 'a', _rev: 0, n: 9 });
        assert.equal(await store.get('projects', 'b'), null);
        assert.deepEqual(await store.putMany([]), []);
      });

      it('sums a numeric field over the matching documents', async () => {
        await store.putMany([
          { collection: 'charges', doc: { _id: '1', _rev: 0, drive_id: 'd', seconds: 1.5 }, expectedRev: null },
          { collection: 'charges', doc: { _id: '2', _rev: 0, drive_id: 'd', seconds: 2 }, expectedRev: null },
          { collection: 'charges', doc: { _id: '3', _rev: 0, drive_id: 'e', seconds: 7 }, expectedRev: null },
        ]);
        assert.equal(await store.sum('charges', { drive_id: 'd' }, 'seconds'), 3.5);
        assert.equal(await store.sum('charges', { drive_id: 'none' }, 'seconds'), 0);
      });

      it('counts the matching documents of one collection', async () => {
        await store.putMany([
          { collection: 'jobs', doc: { _id: '1', _rev: 0, drive_id: 'd', job_state: 'queued' }, expectedRev: null },
          { collection: 'jobs', doc: { _id: '2', _rev: 0, drive_id: 'd', job_state: 'running' }, expectedRev: null },
          { collection: 'jobs', doc: { _id: '3', _rev: 0, drive_id: 'd', job_state: 'stopped' }, expectedRev: null },
          { collection: 'jobs', doc: { _id: '4', _rev: 0, drive_id: 'e', job_state: 'queued' }, expectedRev: null },
        ]);
        await store.put('projects', { _id: '5', _rev: 0, drive_id: 'd', job_state: 'queued' }, null);
        assert.equal(await store.count('jobs', { drive_id: 'd', job_state: { $in: ['queued', 'running'] } }), 2);
        assert.equal(await store.count('jobs', { drive_id: 'd' }), 3);
        assert.equal(await store.count('jobs', { drive_id: 'none' }), 0);
      });
    });

    describe('find', function () {
      beforeEach(async () => {
        for (const person of [...PEOPLE].reverse()) await store.put('people', person, null);
      });

      for (const [title, filter, expected] of MATCHES) {
        it(`filters: ${title}`, async () => assert.deepEqual(ids(await store.find('people', filter)), expected));
      }
      for (const [title, filter] of REJECTED) {
        it(`rejects ${title}`, async () => assert.rejects(store.find('people', filter)));
      }
      for (const [title, findOptions, expected] of SORTS) {
        it(`sorts: ${title}`, async () => assert.deepEqual(ids(await store.find('people', {}, findOptions)), expected));
      }

      for (const direction of ['asc', 'desc'] as const) {
        for (const field of ['nickname', 'age', 'created_at', 'name']) {
          it(`pages the API's way (findPage) by ${field} ${direction}, nulls and ties included, each document once`, async () => {
            const base = { drive_id: 'd1' };
            const all = ids(
              await store.find('people', base, {
                sort: [
                  [field, direction === 'asc' ? 1 : -1],
                  ['_id', direction === 'asc' ? 1 : -1],
                ],
              }),
            );
            const seen: string[] = [];
            let cursor: string | undefined;
            for (let n = 0; n < 10; n++) {
              const page = await findPage(store, 'people', base, { sort: field, direction, limit: 1, cursor });
              seen.push(...ids(page.docs));
              cursor = page.next_cursor;
              if (!cursor) break;
            }
            assert.deepEqual(seen, all);
          });
        }
      }

      it('pages with a keyset cursor through ties, newest first', async () => {
        const seen: string[] = [];
        let filter: Filter = { drive_id: 'd1' };
        for (;;) {
          const [last] = await store.find('people', filter, {
            sort: [
              ['created_at', -1],
              ['_id', -1],
            ],
            limit: 1,
          });
          if (!last) break;
          seen.push(last._id);
          const at = String(last.created_at);
          filter = { drive_id: 'd1', $or: [{ created_at: { $lt: at } }, { created_at: at, _id: { $lt: last._id } }] };
        }
        assert.deepEqual(seen, ['c', 'b', 'a']);
      });

      it('keeps answering the same after ensureIndex, which is idempotent', async () => {
        await store.ensureIndex('people', ['drive_id', 'created_at']);
        await store.ensureIndex('people', ['drive_id', 'created_at']);
        await store.ensureIndex('people', ['team.name']);
        await store.ensureIndex('people-archive.2024', ['team.name']);
        assert.deepEqual(ids(await store.find('people', { drive_id: 'd1', created_at: { $gte: T2 } }, { sort: [['created_at', -1]] })), [
          'b',
          'c',
        ]);
        assert.deepEqual(ids(await store.find('people', { 'team.name': 'red' })), ['a', 'd']);
      });

      it('clears one collection and leaves the others', async () => {
        await store.put('pets', { _id: 'a', _rev: 1, name: 'Rex' }, null);
        await store.clear('people');
        assert.deepEqual(await store.find('people', {}), []);
        assert.equal(await store.get('people', 'a'), null);
        assert.deepEqual(ids(await store.find('pets', {})), ['a']);
      });

      it('deletes the documents of one collection that match a filter, counting them', async () => {
        await store.put('pets', { _id: 'a', _rev: 1, name: 'Rex', created_at: T1 }, null);
        assert.equal(await store.deleteMany('people', { created_at: { $lt: T3 } }), 3);
        assert.deepEqual(ids(await store.find('people', {})), ['d']);
        assert.equal(await store.deleteMany('people', { _id: 'd' }), 1);
        assert.equal(await store.deleteMany('people', { _id: 'd' }), 0, 'nothing left to delete');
        assert.deepEqual(ids(await store.find('pets', {})), ['a'], 'another collection is untouched');
      });

      it('keeps collections apart, even for the same _id', async () => {
        await store.put('pets', { _id: 'a', _rev: 7, name: 'Rex' }, null);
        assert.equal((await store.get('people', 'a'))?.name, 'Alice');
        assert.equal((await store.get('pets', 'a'))?.name, 'Rex');
        assert.deepEqual(ids(await store.find('pets', { name: 'Alice' })), []);
        assert.equal(await store.put('pets', { _id: 'a', _rev: 8 }, 1), 'stale');
      });
    });

    if (options.persistent) {
      it('keeps documents across a close and reopen', async () => {
        await store.put('projects', { _id: 'kept', _rev: 3, name: 'Kept' }, null);
        await store.close();
        assert.ok(subject.reopen, 'a persistent subject must provide reopen');
        const again = await subject.reopen();
        assert.deepEqual(await again.get('projects', 'kept'), { _id: 'kept', _rev: 3, name: 'Kept' });
        assert.equal(await again.put('projects', { _id: 'kept', _rev: 4 }, 3), 'written');
        await again.close();
      });
    }
  });
}
