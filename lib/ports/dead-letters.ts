/**
 * DeadLetterStore: where an event goes that the relay could not publish, or a consumer group
 * could not decode or handle after bounded tries, so that it stops blocking everything behind
 * it (DESIGN §1 "Poison never blocks"). Operators list, retry or drop letters
 * (`npm run admin -- dead-letters ...`); a retry is carried out by the source itself (the relay, or
 * a running member of the consumer group), which polls for letters marked `retry`.
 */

export type DeadLetterStatus = 'dead' | 'retry';

export interface DeadLetter {
  readonly id: string;
  /** `relay`, or the consumer group that gave up (`projections`, `jobs-import/project_media`, ...). */
  readonly source: string;
  /** What is known of the event; for an undecodable message, only what its headers say (if anything). */
  readonly event_id: string | null;
  readonly event_type: string | null;
  readonly stream_id: string | null;
  /** Store position, or `partition/offset` for a Kafka message. */
  readonly position: string | null;
  readonly reason: string;
  readonly attempts: number;
  /** The event as JSON (a StoredEvent), or base64 of the raw message when it could not be decoded. */
  readonly payload: string;
  readonly payload_encoding: 'json' | 'base64';
  readonly status: DeadLetterStatus;
  readonly created_at: string;
  readonly updated_at: string;
}

export type NewDeadLetter = Omit<DeadLetter, 'id' | 'status' | 'created_at' | 'updated_at'>;

export interface DeadLetterStore {
  /** Records a letter; a letter for the same source and event id replaces the earlier one. */
  put(letter: NewDeadLetter): Promise<DeadLetter>;
  list(filter?: { source?: string; status?: DeadLetterStatus }): Promise<DeadLetter[]>;
  get(id: string): Promise<DeadLetter | null>;
  /** Marks a letter for retry by its source; false when there is no such letter. */
  markRetry(id: string): Promise<boolean>;
  /** Removes a letter (dropped by an operator, or retried successfully); false when there was none. */
  remove(id: string): Promise<boolean>;
  /** Letters of `source` marked for retry, oldest first. */
  dueRetries(source: string, limit: number): Promise<DeadLetter[]>;
  /** A retry failed again: back to `dead` with the new reason. */
  markDead(id: string, reason: string): Promise<void>;
  /** Letters currently dead (for the gauge and /readyz detail). */
  count(): Promise<number>;
}
