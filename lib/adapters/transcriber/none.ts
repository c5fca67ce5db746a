import type { Transcriber } from '../../ports/transcriber';

/** TRANSCRIBER=none: media is imported without a transcript. */
export function createNoTranscriber(): Transcriber {
  return {
    name: 'none',
    async transcribe(_path, { signal }) {
      signal.throwIfAborted();
      return null;
    },
  };
}
