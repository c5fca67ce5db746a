import { MongoServerError, type Db, type Document, type IndexSpecification } from 'mongodb';
import { flushWrites } from './flush';
import type { Doc, Filter, FindOptions, ReadStore } from '../../ports/read-store';
import { keyedSerial } from '../../app/keyed-serial';

/**
 * The MongoDB ReadStore: one collection per read-model collection, the document's `_id` as the
 * Mongo `_id`, documents stored and returned as they are. The port's filter is validated exactly
 * as the embedded adapter validates it, so user input cannot reach Mongo as an operator
 * (`$where`, `$expr`) and both adapters accept and reject the same filters.
 */

const DUPLICATE_KEY = 11000;
const FIELD = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const RANGE = new Set(['$gt', '$gte', '$lt', '$lte']);

type Scalar = string | number | boolean | null;
type SortKey = [field: string, direction: 1 | -1];

// The driver would serialize an undefined field as null; JSON (the embedded adapter) drops it.
const WRITE_OPTIONS = { ignoreUndefined: true } as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function checkField(field: string): string {
  if (!FIELD.test(field)) throw new Error(`invalid field path ${JSON.stringify(field)}`);
  return field;
}

function scalar(field: string, v: unknown): Scalar {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  throw new Error(`${field}: expected a string, number, boolean or null, got ${JSON.stringify(v)}`);
}

function bound(field: string, v: unknown): string | number {
  if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return v;
  throw new Error(`${field}: expected a string or a finite number, got ${JSON.stringify(v)}`);
}

function operator(field: string, op: string, operand: unknown): Array<[string, unknown]> {
  if (RANGE.has(op)) return [[op, bound(field, operand)]];
  switch (op) {
    case '$ne':
      return [[op, scalar(field, operand)]];
    case '$in':
      if (!Array.isArray(operand)) throw new Error(`${field}: $in expects an array`);
      return [[op, operand.map((o) => scalar(field, o))]];
    case '$contains':
      if (typeof operand !== 'string') throw new Error(`${field}: $contains expects a string`);
      return [
        ['$regex', escapeRegex(operand)],
        ['$options', 'i'],
      ];
    default:
      throw new Error(`${field}: unknown operator ${JSON.stringify(op)}`);
  }
}

/** Returns undefined when no operator is left: `{ field: {} }` would mean "equals {}" to Mongo. */
function condition(field: string, value: unknown): unknown {
  if (!isObject(value)) return scalar(field, value);
  const ops = Object.entries(value)
    .filter(([, operand]) => operand !== undefined)
    .flatMap(([op, operand]) => operator(field, op, operand));
  return ops.length === 0 ? undefined : Object.fromEntries(ops);
}

function translate(filter: unknown): Document {
  if (!isObject(filter)) throw new Error('a filter must be an object');
  const entries = Object.entries(filter).map(([key, value]): [string, unknown] =>
    key === '$or' ? [key, anyOf(value)] : [checkField(key), condition(key, value)],
  );
  // fromEntries defines own properties, so even a `__proto__` field stays a field.
  return Object.fromEntries(entries.filter(([, value]) => value !== undefined));
}

function anyOf(filters: unknown): Document[] {
  if (!Array.isArray(filters) || filters.length === 0) throw new Error('$or expects a non-empty array of filters');
  return filters.map(translate);
}

function sortKeys(sort: FindOptions['sort'] = []): SortKey[] {
  const keys = sort.map(([field, direction]): SortKey => {
    if (direction !== 1 && direction !== -1) throw new Error(`${field}: sort direction must be 1 or -1`);
    return [checkField(field), direction];
  });
  // Equal keys are ordered by _id so that pages are stable (the embedded adapter does the same).
  return keys.some(([field]) => field === '_id') ? keys : [...keys, ['_id', 1]];
}

function checkLimit(limit: number | undefined): number | undefined {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) throw new Error(`limit must be a non-negative integer, got ${limit}`);
  return limit;
}

/**
 * The declared fields, then `_id`: every find is sorted with the `_id` tie-break, and an index
 * only serves a sort whose keys it holds in that order, so without `_id` a page of equal
 * `created_at`s would be sorted in memory. Ascending throughout: Mongo walks an index backwards
 * for a sort that reverses every key (`created_at` and `_id` both descending, as keyset paging
 * does). createIndex is a no-op when an index with the same keys exists.
 */
export function indexSpec(fields: readonly string[]): IndexSpecification {
  if (fields.length === 0) throw new Error('ensureIndex needs at least one field');
  const keys = fields.map(checkField);
  return Object.fromEntries((keys.includes('_id') ? keys : [...keys, '_id']).map((field) => [field, 1]));
}

const isDuplicateKey = (error: unknown) => error instanceof MongoServerError && error.code === DUPLICATE_KEY;

/** `close` leaves the client open: the composition root that connected it also closes it. */
export function createMongoReadStore(db: Db): ReadStore {
  const collectionOf = (name: string) => db.collection<Doc>(name);

  const store: ReadStore = {
    async get(collection, id) {
      return collectionOf(collection).findOne({ _id: id });
    },
    async getJson(collection, id) {
      const doc = await collectionOf(collection).findOne({ _id: id });
      return doc === null ? null : JSON.stringify(doc);
    },
    async find(collection, filter: Filter, options = {}) {
      const query = translate(filter);
      const sort = sortKeys(options.sort);
      const limit = checkLimit(options.limit);
      // Mongo reads limit 0 as "no limit"; the port means "no documents".
      if (limit === 0) return [];
      return collectionOf(collection).find(query, { sort, limit }).toArray();
    },
    async put(collection, doc, expectedRev) {
      if (expectedRev === null) {
        try {
          await collectionOf(collection).insertOne(doc, WRITE_OPTIONS);
          return 'written';
        } catch (error) {
          if (isDuplicateKey(error)) return 'stale';
          throw error;
        }
      }
      const result = await collectionOf(collection).replaceOne({ _id: doc._id, _rev: expectedRev }, doc, WRITE_OPTIONS);
      return result.matchedCount === 0 ? 'stale' : 'written';
    },
    async getMany(collection, ids) {
      return (await collectionOf(collection)
        .find({ _id: { $in: [...ids] } })
        .toArray()) as Doc[];
    },
    async putMany(writes) {
      // Independent documents: the compare-and-set of each is what matters, not one transaction.
      // Different documents side by side; the writes to one document in the order given.
      const inOrder = keyedSerial();
      return Promise.all(writes.map((w) => inOrder(`${w.collection}\n${w.doc._id}`, () => store.put(w.collection, w.doc, w.expectedRev))));
    },
    async sum(collection, filter: Filter, field) {
      const [row] = await collectionOf(collection)
        .aggregate<{ total: number }>([
          { $match: translate(filter) },
          // $sum skips values that are not numbers, as SQLite's TOTAL() counts them as nothing.
          { $group: { _id: null, total: { $sum: `$${checkField(field)}` } } },
        ])
        .toArray();
      return row?.total ?? 0;
    },
    async count(collection, filter: Filter) {
      return collectionOf(collection).countDocuments(translate(filter));
    },
    async ensureIndex(collection, fields) {
      await collectionOf(collection).createIndex(indexSpec(fields));
    },
    async deleteMany(collection, filter: Filter) {
      return (await collectionOf(collection).deleteMany(translate(filter))).deletedCount;
    },
    async clear(collection) {
      await collectionOf(collection).deleteMany({});
    },
    flush: () => flushWrites(db),
    async close() {},
  };
  return store;
}
