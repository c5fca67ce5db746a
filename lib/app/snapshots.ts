import type { Logger } from 'pino';
import type { ReadStore } from '../ports/read-store';

/**
 * Snapshots of folded streams, so that a process that has not read a long stream yet (after a
 * restart, or once its fold was pushed out of the handler's cache) reads the events after the
 * snapshot instead of the whole stream. A drive's balance stream takes two to four events per
 * file imported and is never cut: 300,000 of them took 5.4 s of the event loop and 460 MB to fold
 * from the start (measured), on the accept path too (`mediaSecondsLeft`).
 *
 * A snapshot is a cache of a fold at a revision, nothing more: the state is the snapshot's plus
 * the events the event store holds after it, and a command is still appended expecting the
 * stream's revision, so a decision is the event store's as before (a snapshot that is old, or
 * missing, only costs reading more). Kept in the read store's `snapshots` collection (SQLite or
 * MongoDB, shared by the processes as the event store is), which is not a read model: replay
 * leaves it alone, and a fresh read store starts without snapshots and makes them again.
 */

export const SNAPSHOTS = 'snapshots';

export type Snapshot = { readonly version: number; readonly revision: number; readonly state: unknown };

export interface SnapshotStore {
  /** The stream's snapshot, or null (none, or it cannot be read: then the stream is read whole). */
  load(streamId: string): Promise<Snapshot | null>;
  /** Keeps `snapshot` unless one as new is kept already; never throws (a snapshot not kept costs a longer read later). */
  save(streamId: string, snapshot: Snapshot): Promise<void>;
}

/** Tries of a save against other processes saving the same stream's snapshot. */
const SAVE_TRIES = 5;

export function readStoreSnapshots(read: ReadStore, log: Logger): SnapshotStore {
  return {
    async load(streamId) {
      try {
        const doc = await read.get(SNAPSHOTS, streamId);
        return doc && { version: Number(doc.version), revision: Number(doc.revision), state: doc.state };
      } catch (err) {
        log.warn({ err, stream_id: streamId }, 'snapshot not readable; folding the stream from its start');
        return null;
      }
    },
    async save(streamId, snapshot) {
      try {
        for (let attempt = 0; attempt < SAVE_TRIES; attempt++) {
          const kept = await read.get(SNAPSHOTS, streamId);
          // A newer one of the same version stays; one of another version is replaced.
          if (kept && Number(kept.version) === snapshot.version && Number(kept.revision) >= snapshot.revision) return;
          const doc = { _id: streamId, _rev: (kept?._rev ?? 0) + 1, ...snapshot };
          if ((await read.put(SNAPSHOTS, doc, kept ? kept._rev : null)) === 'written') return;
        }
      } catch (err) {
        log.warn({ err, stream_id: streamId }, 'snapshot not kept; the stream is read from the last one kept');
      }
    },
  };
}
