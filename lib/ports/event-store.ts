/**
 * EventStore: the only source of truth. Streams of events with optimistic concurrency,
 * plus a global, totally ordered `$all` that the relay and the embedded log read.
 */

/** An event as a command handler produces it, before it is stored. */
export interface NewEvent {
  readonly id: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
  readonly metadata: EventMetadata;
}

/** Metadata every event carries. `partition_key` keeps a project's events ordered in the log. */
export interface EventMetadata {
  readonly partition_key: string;
  readonly correlation_id?: string;
  readonly causation_id?: string;
  readonly [key: string]: unknown;
}

/**
 * Global position in `$all`. Opaque to callers: compare only through the adapter that made it.
 * The embedded store uses the decimal row number; EventStoreDB uses "commit/prepare".
 */
export type Position = string;

/**
 * A position as a number to compare, for every adapter: the embedded row number, or
 * EventStoreDB's commit position (`commit/prepare`), both growing with `$all`.
 */
export function positionValue(position: Position): bigint {
  const slash = position.indexOf('/');
  return BigInt(slash === -1 ? position : position.slice(0, slash));
}

/** An event as read back from the store. `revision` is its 0-based index in its stream. */
export interface StoredEvent extends NewEvent {
  readonly streamId: string;
  readonly revision: number;
  readonly position: Position;
  readonly createdAt: string;
}

/** `no_stream`: the stream must not exist; a number: the revision of the stream's last event; `any`: no check. */
export type ExpectedRevision = 'no_stream' | 'any' | number;

export type AppendResult =
  | { readonly ok: true; readonly nextRevision: number; readonly position: Position }
  | { readonly ok: false; readonly conflict: { readonly expected: ExpectedRevision; readonly actual: number | 'no_stream' } };

export interface Subscription {
  /** Stops delivering and resolves once the handler in flight (if any) has finished. */
  close(): Promise<void>;
}

/** What `appendAll` did: every append (their results in order), or none. */
export type AllOrNothing =
  | { readonly ok: true; readonly results: readonly Extract<AppendResult, { ok: true }>[] }
  | { readonly ok: false; readonly index: number; readonly conflict: Extract<AppendResult, { ok: false }>['conflict'] };

export type StreamAppend = { readonly streamId: string; readonly events: readonly NewEvent[]; readonly expected: ExpectedRevision };

export interface EventStore {
  /** Appends atomically, or reports a conflict (a typed outcome, never a thrown error). */
  append(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends to several streams in the order given, each only once every append before it has
   * succeeded, as awaiting `append` one after the other does, and resolves to the results of the
   * appends made, up to the first conflict. Not atomic: a failure or a crash can leave the first
   * appends made without the rest. Optional: a store that can do it in one round trip (the
   * embedded store commits the sequence in one group commit) has it; `appendInOrder` in
   * lib/app/command-handler falls back to one append after another.
   */
  appendInOrder?(appends: readonly StreamAppend[]): Promise<AppendResult[]>;
  /**
   * Appends to several streams, all of them or none: each append checked against its stream as the
   * ones before it in the sequence left it, and when one conflicts, none is made (`index`: the one
   * that conflicted). Optional: the embedded store has it (one SAVEPOINT inside its group commit);
   * EventStoreDB's appends are one stream each, so a caller without it decides what a sequence made
   * in part means (`appendInOrder`).
   */
  appendAll?(appends: readonly StreamAppend[]): Promise<AllOrNothing>;
  /**
   * The events of a stream in order, all of them or those from revision `fromRevision` on (the
   * tail after a state folded earlier); `[]` when the stream does not exist or has no such event.
   */
  readStream(streamId: string, options?: { readonly fromRevision?: number }): Promise<StoredEvent[]>;
  /** Up to `limit` events of `$all` strictly after `after` (`null`: from the beginning). */
  readAll(after: Position | null, limit: number): Promise<StoredEvent[]>;
  /**
   * Follows `$all` strictly after `after`, live: events appended later, also by other
   * processes, are delivered in order. The handler is awaited before the next event; it must
   * handle its own failures (a handler that throws ends the subscription).
   */
  subscribeAll(after: Position | null, handler: (event: StoredEvent) => Promise<void>): Subscription;
  close(): Promise<void>;
}
