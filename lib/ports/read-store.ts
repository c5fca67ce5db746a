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

/** Fields (dotted paths allowed) to conditions, all of which must hold; `$or` of sub-filters. */
export type Filter = { readonly [field: string]: Condition } | { readonly $or: readonly Filter[] };

export interface FindOptions {
  readonly sort?: ReadonlyArray<readonly [field: string, direction: 1 | -1]>;
  readonly limit?: number;
}

export type PutOutcome = 'written' | 'stale';

export interface ReadStore {
  get(collection: string, id: string): Promise<Doc | null>;
  find(collection: string, filter: Filter, options?: FindOptions): Promise<Doc[]>;
  /**
   * Writes `doc` only when the stored document's `_rev` equals `expectedRev`
   * (`null`: no document may exist). Otherwise returns `stale` and changes nothing.
   */
  put(collection: string, doc: Doc, expectedRev: number | null): Promise<PutOutcome>;
  /** Declares the fields queries filter and sort on, so the adapter can index them. */
  ensureIndex(collection: string, fields: readonly string[]): Promise<void>;
  /** Removes every document of the collection (replay). */
  clear(collection: string): Promise<void>;
  close(): Promise<void>;
}
