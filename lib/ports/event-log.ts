import type { StoredEvent, Subscription } from './event-store';

/**
 * EventLog: the fan-out of store events to consumer groups (Kafka topics, or the embedded
 * store's `$all`). Delivery is at least once; within one partition key, in order.
 */

export interface DeliveryContext {
  /** Tells the log that a long handler is alive (Kafka session heartbeat). Cheap; call often. */
  heartbeat(): Promise<void>;
}

export type LogHandler = (event: StoredEvent, ctx: DeliveryContext) => Promise<void>;

export interface SubscribeOptions {
  /**
   * How many partition keys are handled at once. Events of one key are always handled one
   * after the other; a checkpoint never passes an event whose handler has not succeeded.
   */
  readonly concurrency?: number;
  /** Where a group with no checkpoint starts: `earliest` (default) or `latest`. */
  readonly startAt?: 'earliest' | 'latest';
}

export interface EventLog {
  /**
   * Joins consumer group `group`. A handler that throws is retried with back-off (the event is
   * not committed), so handlers must be idempotent.
   */
  subscribe(group: string, handler: LogHandler, options?: SubscribeOptions): Promise<Subscription>;
  close(): Promise<void>;
}

/** The relay's side of the log: publish resolves only once the log has acknowledged. */
export interface LogProducer {
  publish(events: readonly StoredEvent[]): Promise<void>;
  close(): Promise<void>;
}

/** Where the relay remembers how far it got (a store position, saved after the log acked). */
export interface CheckpointStore {
  load(name: string): Promise<string | null>;
  save(name: string, position: string): Promise<void>;
}
