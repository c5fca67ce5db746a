/**
 * SecretBox: secrets that events must carry (a drive's webhook secret) are sealed with a key held
 * outside the event store and the log, so a copy of either (a backup, a Kafka topic, a stolen
 * `events.sqlite`) holds no usable secret.
 */
export interface SecretBox {
  /** Seals `secret` for the record `context` names (a drive id): it opens for that context only. */
  seal(secret: string, context: string): string;
  /**
   * The secret `stored` holds. A value that is not sealed (written before sealing existed) is
   * returned as it is. Throws an `internal_error` AppError, naming the key, when `stored` was
   * sealed with another key or for another context.
   */
  open(stored: string, context: string): string;
}
