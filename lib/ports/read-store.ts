/**
 * ReadStore: document collections for the query side. Documents are plain JSON objects with a
 * string `_id` and a numeric `_rev` (the revision of the source stream's last applied event).
 */

export type Doc = { readonly _id: string; readonly _rev: number } & Record<string, unknown>;

/** A filter value: equality, or one comparison operator object. */
export type Condition =
  | string
  | number
  | boolean
  | null
  | { readonly $gt?: unknown; readonly $gte?: unknown; readonly $lt?: unknown; readonly $lte?: unknown; readonly $ne?: unknown }
  | { readonly $in: readonly unknown[] }
  | { readonly $contains: string }; // case-insensitive substring

/**
 * Fields to conditions, all of which must hold, optionally with `$or`: at least one sub-filter must
 * also hold. The second member lets `$or` sit beside fields, as keyset pagination needs:
 * `{ drive_id, $or: [{ created_at: { $lt: at } }, { created_at: at, _id: { $lt: id } }] }`.
 *
 * Semantics every adapter shares (the contract suite in test/contract checks them):
 * - A field is a dotted path of identifiers (`team.name`); anything else is rejected, as are
 *   unknown operators, so a filter built from user input cannot smuggle in engine syntax.
 * - A scalar is equality; it never matches a value of another type (`30` is not `'30'` nor `true`).
 *   A missing field equals `null`; `$ne` and `$in` follow from that.
 * - `$gt/$gte/$lt/$lte` take a number or a string and only match values of the same type: numbers
 *   numerically, strings by code point (so ISO timestamps compare chronologically). A missing
 *   field matches none of them. An operator whose value is `undefined` is left out, so optional
 *   bounds can be passed straight through.
 * - `$contains` is a case-insensitive substring match on string values (ASCII case folding is
 *   guaranteed; beyond ASCII it follows the engine).
 * - `$or` needs at least one sub-filter.
 * - Filters and sorts address scalar values; fields holding arrays or objects are unspecified
 *   (MongoDB matches array elements, SQLite does not).
 */
export type Filter =
  { readonly [field: string]: Condition } | { readonly $or: readonly Filter[]; readonly [field: string]: Condition | readonly Filter[] };

export interface FindOptions {
  /**
   * Ascending puts missing and `null` first, descending last (as MongoDB does). Equal keys are
   * always ordered by `_id` ascending, so pages are stable; without `sort` the order is by `_id`.
   */
  readonly sort?: ReadonlyArray<readonly [field: string, direction: 1 | -1]>;
  /** A non-negative integer; `0` returns no documents. */
  readonly limit?: number;
}

export type PutOutcome = 'written' | 'stale';

/**
 * The reading half of a store. What the APIs answer from: an adapter may serve it from a
 * snapshot that trails the store's writes by a few milliseconds (`ReadSide.queries`), as read
 * models trail the log anyway; whoever reads in order to write (projector, balance checks) reads
 * the `ReadStore` itself.
 */
export interface ReadQueries {
  get(collection: string, id: string): Promise<Doc | null>;
  /**
   * The document as JSON text (what `get` parses), or null. The same text while the document is
   * unchanged, so that a caller can keep what it made of it (the job route keeps its answer).
   */
  getJson(collection: string, id: string): Promise<string | null>;
  find(collection: string, filter: Filter, options?: FindOptions): Promise<Doc[]>;
  /** The documents among `ids` that exist, in no particular order. */
  getMany(collection: string, ids: readonly string[]): Promise<Doc[]>;
  /** The sum of the numeric `field` over the documents matching `filter` (0 when none). */
  sum(collection: string, filter: Filter, field: string): Promise<number>;
  /** How many documents match `filter`. */
  count(collection: string, filter: Filter): Promise<number>;
}

/** A compare-and-set write of `doc` into `collection`, as `put` does it. */
export type CollectionWrite = { readonly collection: string; readonly doc: Doc; readonly expectedRev: number | null };

export interface ReadStore extends ReadQueries {
  /**
   * Several compare-and-set writes as `put` does them, to one collection or several (replay writes
   * a page of documents at once, the projector a batch's documents of every read model), in one
   * transaction where the engine has them; outcomes in the order given.
   */
  putMany(writes: readonly CollectionWrite[]): Promise<PutOutcome[]>;
  /**
   * Writes `doc` only when the stored document's `_rev` equals `expectedRev`
   * (`null`: no document may exist). Otherwise returns `stale` and changes nothing.
   */
  put(collection: string, doc: Doc, expectedRev: number | null): Promise<PutOutcome>;
  /** Declares the fields queries filter and sort on, so the adapter can index them. */
  ensureIndex(collection: string, fields: readonly string[]): Promise<void>;
  /**
   * Removes the documents of the collection that match `filter` (the same filters as `find`);
   * resolves to how many were removed. For documents that are not projections of events, such
   * as web sessions, which end and expire.
   */
  deleteMany(collection: string, filter: Filter): Promise<number>;
  /** Removes every document of the collection (replay). */
  clear(collection: string): Promise<void>;
  /**
   * Makes every write acknowledged so far survive a power cut. An adapter may acknowledge writes
   * before they reach the disk (SQLite's WAL at `synchronous = NORMAL`); the projector flushes
   * before its consumer group records a position past them (`SubscribeOptions.beforeCheckpoint`),
   * so that position never outlives the documents it stands for.
   */
  flush(): Promise<void>;
  close(): Promise<void>;
}
