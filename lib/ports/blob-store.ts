import type { Readable } from 'node:stream';

/** BlobStore: media files and renders, by key ("drive/project/uuid", never with an extension from a URL). */
export interface BlobStore {
  /** Streams `source` into the blob `key`; the blob appears whole or not at all. Returns its size. */
  put(key: string, source: Readable, options?: { signal?: AbortSignal }): Promise<{ size: number }>;
  /** A local path readable by ffmpeg for the blob. */
  localPath(key: string): string;
  exists(key: string): Promise<boolean>;
  /** The blob for reading, or null when there is none: its size, when it was written, and its bytes `start`..`end` (inclusive) as a stream. */
  open(key: string): Promise<BlobReader | null>;
  delete(key: string): Promise<void>;
}

export interface BlobReader {
  readonly size: number;
  readonly modified: Date;
  /** The whole blob, or bytes `start` to `end` inclusive (as HTTP ranges count). */
  read(range?: { readonly start: number; readonly end: number }): Readable;
}
