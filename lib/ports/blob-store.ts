import type { Readable } from 'node:stream';

/** BlobStore: media files and renders, by key ("drive/project/uuid", never with an extension from a URL). */
export interface BlobStore {
  /** Streams `source` into the blob `key`; the blob appears whole or not at all. Returns its size. */
  put(key: string, source: Readable, options?: { signal?: AbortSignal }): Promise<{ size: number }>;
  /** A local path readable by ffmpeg for the blob. */
  localPath(key: string): string;
  exists(key: string): Promise<boolean>;
  delete(key: string): Promise<void>;
}
