import { ConfigError, type Config } from '../../config';
import type { Transcriber } from '../../ports/transcriber';
import type { ChunkingOptions } from './chunked';
import { createNoTranscriber } from './none';
import { createOpenAiTranscriber } from './openai';
import { createPocketsphinxTranscriber, findPocketsphinx } from './pocketsphinx';

export interface TranscriberDeps extends ChunkingOptions {
  /** Default: `pocketsphinx` or `pocketsphinx_continuous` found on PATH. */
  pocketsphinxPath?: string;
  /** Default `whisper-1`. */
  openAiModel?: string;
}

/** The Transcriber that TRANSCRIBER names; throws at start-up, naming the variable, when it cannot work here. */
export function createTranscriber(config: Config['transcriber'], deps: TranscriberDeps): Transcriber {
  switch (config.kind) {
    case 'none':
      return createNoTranscriber();
    case 'openai':
      if (!config.url) throw new ConfigError('invalid configuration: TRANSCRIBER_URL: required when TRANSCRIBER=openai');
      return createOpenAiTranscriber({ ...deps, url: config.url, apiKey: config.apiKey, model: config.model ?? deps.openAiModel });
    case 'pocketsphinx': {
      const binaryPath = deps.pocketsphinxPath ?? findPocketsphinx();
      if (!binaryPath) {
        throw new ConfigError(
          'invalid configuration: TRANSCRIBER: pocketsphinx is not installed (apt-get install pocketsphinx pocketsphinx-en-us)',
        );
      }
      return createPocketsphinxTranscriber({ ...deps, binaryPath });
    }
    default:
      throw new ConfigError(`invalid configuration: TRANSCRIBER: unknown transcriber "${String(config.kind satisfies never)}"`);
  }
}
