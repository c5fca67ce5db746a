import type { TimeRange } from '../domain/agent/edits';

/**
 * SilenceDetector: where a media file is silent, for the agent's silence and pause tools
 * (issue 20). Blobs never change once written, so an adapter may keep the answer for good.
 */
export interface SilenceDetector {
  /**
   * The silent intervals of the first audio stream of blob `blobKey`, in media seconds (ms
   * precision), sorted and disjoint; empty for media without audio. A file that cannot be read
   * rejects with a non-retriable AppError.
   */
  detect(blobKey: string, options?: { signal?: AbortSignal }): Promise<readonly TimeRange[]>;
}
