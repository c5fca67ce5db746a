import type { Readable } from 'node:stream';

/** Where an upload stands. `bytes` are contiguous from 0 and durable. */
export type UploadState = {
  readonly bytes: number;
  /** Moved into the blob store by `complete`; `blobKey` is then set. Whether the job knows of it is the job's to say. */
  readonly complete: boolean;
  readonly blobKey?: string;
};

/**
 * UploadStore: resumable direct uploads, one staging file per asset id (a UUID), appended to
 * in order and finally moved into the blob store.
 *
 * Guarantees:
 * - `append` is serialised per asset within a process: a second `append` or `complete` for an
 *   asset while one runs is refused with `conflict` (state `uploading`), never queued, so a slow
 *   or stale request cannot hold a second one's connection open. Separate processes sharing the
 *   staging folder are not serialised: route an asset's PUTs to one process.
 * - While an `append` runs, `received` reports the bytes as they were before it: what it
 *   reports is never rolled back. Told to, it first waits up to `settleMs` for the append to end.
 * - Storage faults (permissions, read-only, full, I/O) are retriable `unavailable` errors that
 *   name no server path.
 */
export interface UploadStore {
  received(assetId: string, options?: { settleMs?: number }): Promise<UploadState>;

  /**
   * Streams `source` into the upload at `offset`, never holding it whole in memory.
   * - `offset` must equal the bytes received so far, else `conflict` (state `incomplete`) naming
   *   the expected offset; an upload already complete is `conflict` (state `complete`).
   * - Data beyond `total` (the declared file size) or beyond `length` (what this part declares)
   *   is `payload_too_large`: reading stops at once, the source is destroyed, and nothing of this
   *   call is kept (the bytes before `offset` are). A refused body is not trusted in part.
   * - A source that fails or is aborted keeps every byte fully written before the failure, synced,
   *   so the sender can resume from `received`.
   * `complete` in the answer means all `total` bytes are in: finish with `complete()`.
   */
  append(
    assetId: string,
    offset: number,
    source: Readable,
    options: { total: number; length?: number; signal?: AbortSignal },
  ): Promise<{ bytes: number; complete: boolean }>;

  /**
   * Moves the staged file to the blob `blobKey` (a rename: same file system) and marks the upload
   * complete, so `received` answers `complete` with its key after the staging file is gone.
   * Idempotent: on a complete upload it answers the recorded size. Crash-safe: the mark is
   * written before the move, and an upload is complete only once both happened.
   */
  complete(assetId: string, blobKey: string): Promise<{ size: number }>;

  /**
   * Removes what was staged of an upload that will not be finished (its job has started, so its
   * URL has expired). The mark of a complete upload stays (a few bytes): a later PUT to its URL
   * is still refused as complete, never taken as a new upload over the imported blob.
   */
  discard(assetId: string): Promise<void>;

  /**
   * Forgets an upload whose job takes no more uploads (it has started, or was cancelled): its
   * staged bytes and its completion mark go. The job's record then answers for it: a later PUT to
   * its URL is refused by the job, as complete when the job holds it. The finished file in the
   * blob store is not touched: whether anything owns it is the job's to say.
   */
  forget(assetId: string): Promise<void>;
}
