import type { StoredEvent, Subscription } from './event-store';

/**
 * EventLog: the fan-out of store events to consumer groups (Kafka topics, or the embedded
 * store's `$all`). Delivery is at least once; within one partition key, in order.
 */

export interface DeliveryContext {
  /** Tells the log that a long handler is alive (Kafka session heartbeat). Cheap; call often. */
  heartbeat(): Promise<void>;
}

/**
 * What a handler returns. `undefined`: the event is handled. `{ settled }`: the handler took the
 * event on and finishes it later (a job handed to a pool): delivery goes on at once, and the
 * log commits past the event only once `settled` resolves. A rejected `settled` counts as a
 * failed try, like a thrown error.
 */
export type HandlerOutcome = void | { readonly settled: Promise<void> };

export type LogHandler = (event: StoredEvent, ctx: DeliveryContext) => Promise<HandlerOutcome>;

export interface SubscribeOptions {
  /**
   * How many partition keys are handled at once. Events of one key are always handled one
   * after the other; a checkpoint never passes an event whose handler has not succeeded.
   */
  readonly concurrency?: number;
  /** Where a group with no checkpoint starts: `earliest` (default) or `latest`. */
  readonly startAt?: 'earliest' | 'latest';
  /**
   * Tries before an event (or an undecodable message) is given up: it goes to the dead-letter
   * store with the reason, and the checkpoint moves past it. Default 5.
   */
  readonly maxAttempts?: number;
  /**
   * Awaited before the group records a position past events this member handled (the embedded
   * log's checkpoint, Kafka's offset commit). A handler whose writes are acknowledged before they
   * are durable (the projector's read store) makes them durable here: a power cut must not leave
   * the position past writes it lost. If it rejects, nothing is recorded and the next try calls it
   * again.
   */
  readonly beforeCheckpoint?: () => Promise<void>;
  /** At most this many events taken on but not yet settled; delivery pauses beyond it. Default 512. */
  readonly maxInFlight?: number;
  /**
   * Called once when the subscription can no longer consume (the consumer crashed for good, the
   * store is gone). The service then reports not ready and exits so an orchestrator restarts it.
   */
  readonly onFatal?: (err: Error) => void;
}

export interface SubscriptionStatus {
  readonly group: string;
  /** False once the subscription can no longer consume. */
  readonly running: boolean;
  /** Events known to be in the log but not yet handled by this member (null when unknown). */
  readonly lag: number | null;
}

export interface LogSubscription extends Subscription {
  status(): SubscriptionStatus;
  /**
   * Calls `listener` with the group's low-water mark as a `$all` position (see
   * lib/app/consistency.ts `positionValue`) each time it moves: every event at or before it has
   * been handled. Read-your-writes waits on the projector's. Absent where the log cannot tell
   * store positions (the Kafka log; see docs/decisions.md, "Read-your-writes").
   */
  onWatermark?(listener: (position: bigint) => void): void;
  /**
   * Calls `listener` each time one partition this member holds reaches a higher position: every
   * event of that partition at or before it has been handled. Where members of a group hold some
   * partitions each (Kafka), the group's watermark is the least over all partitions, which only
   * what they record together can tell (lib/app/shared-consistency.ts). Absent where the log has
   * no partitions (the embedded log: its `onWatermark` is the group's).
   */
  onPartitionMark?(listener: (reached: PartitionMark) => void): void;
}

/** A partition reached a store position; the topic has `partitions` partitions. */
export type PartitionMark = { readonly partition: number; readonly position: bigint; readonly partitions: number };

export interface EventLog {
  /**
   * Joins consumer group `group`. A handler that throws is retried with back-off (the event is
   * not committed), so handlers must be idempotent; after `maxAttempts` tries the event goes to
   * the dead-letter store and the group moves on. Letters of this group that an operator marks
   * for retry are handled again by a running member.
   */
  subscribe(group: string, handler: LogHandler, options?: SubscribeOptions): Promise<LogSubscription>;
  close(): Promise<void>;
}

/**
 * The relay's side of the log: publish resolves only once the log has acknowledged. It is all or
 * nothing: a batch holding an event the log can never take (no schema for its type, data that
 * does not fit it, over the size limit) is refused before anything is sent, with a
 * non-retriable AppError; the relay then publishes that batch one by one and dead-letters the
 * refused event. Any other failure is transient and retried.
 */
export interface LogProducer {
  publish(events: readonly StoredEvent[]): Promise<void>;
  /**
   * Tells every partition that everything up to store position `position` has been published
   * (after a publish resolved), so consumers can tell how far they have handled the store
   * (read-your-writes). Optional: a log whose consumers read the store's order needs none.
   */
  publishMark?(position: string): Promise<void>;
  close(): Promise<void>;
}

/** Where the relay remembers how far it got (a store position, saved after the log acked). */
export interface CheckpointStore {
  load(name: string): Promise<string | null>;
  save(name: string, position: string): Promise<void>;
}
