import { readStoreSnapshots } from '../../lib/app/snapshots';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { createLocalUploadStore } from '../../lib/adapters/local/upload-store';
import type { Logger } from 'pino';
import { openAgentCatalog } from '../../lib/adapters/agent/catalog-file';
import { openMedia, openSigningSecret } from '../../lib/adapters/from-config';
import { createFfmpegRenderer } from '../../lib/adapters/ffmpeg/renderer';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createBalances } from '../../lib/app/balances';
import type { Config } from '../../lib/config';
import type { EventLog } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import type { JobObserver } from './job-runner';
import type { ProcessorsDeps } from './index';
import { createBuiltinModel } from '../../lib/adapters/agent/builtin';
import { resolveFfmpegPaths } from '../../lib/adapters/ffmpeg/binaries';
import { createFfmpegSilenceDetector } from '../../lib/adapters/ffmpeg/silence';
import type { BlobStore } from '../../lib/ports/blob-store';
import { agentModels } from './agent';
import { editingToolset } from './agent/editing-tools';

/**
 * The agent: the editing tools (silences measured with ffmpeg, kept per blob in DATA_DIR/silences),
 * the offline builtin planner, and the chat-completions server of AGENT_LLM_URL for the models it serves.
 */
function agentFromConfig(config: Config, blobs: BlobStore): ProcessorsDeps['agent'] {
  const silences = createFfmpegSilenceDetector({
    ffmpegPath: resolveFfmpegPaths().ffmpeg,
    blobs,
    cacheDir: join(config.dataDir, 'silences'),
  });
  const llm = config.agent.llmUrl ? { url: config.agent.llmUrl, apiKey: config.agent.llmApiKey } : null;
  return {
    toolset: editingToolset({ silences }),
    modelFor: agentModels(openAgentCatalog(config.agent), { llm, builtin: createBuiltinModel() }),
  };
}

/** The processors' dependencies from configuration, shared by main.ts and the all-in-one worker. */
export const processorsDeps = (
  config: Config,
  logger: Logger,
  stores: { store: EventStore; read: ReadStore; log: EventLog },
  extra: { observer?: JobObserver; onFatal?: (err: Error) => void } = {},
): ProcessorsDeps => {
  const media = openMedia(config, logger);
  return {
    ...media,
    uploads: createLocalUploadStore({ root: join(config.dataDir, 'uploads'), localPath: media.blobs.localPath }),
    ...stores,
    ...extra,
    logger,
    clock: systemClock,
    ids: randomIds,
    // Stable across restarts of the same worker (its claims are taken over at once), distinct
    // between live workers: the host name (a container's) and this process, unless set.
    workerId: config.workerId ?? `${hostname()}:${process.pid}`,
    // Folds of the drives' balance streams kept as snapshots, so a restart does not fold them whole.
    balances: createBalances({
      store: stores.store,
      clock: systemClock,
      ids: randomIds,
      snapshots: readStoreSnapshots(stores.read, logger),
    }),
    webUrl: config.webUrl,
    mediaMaxBytes: config.mediaMaxBytes,
    downloadTimeoutMs: config.mediaDownloadTimeoutSeconds * 1000,
    concurrency: config.concurrency,
    agent: agentFromConfig(config, media.blobs),
    publish: {
      renderer: createFfmpegRenderer({ ffmpegPath: resolveFfmpegPaths().ffmpeg, blobs: media.blobs, logger }),
      downloads: { baseUrl: config.baseUrl, secret: openSigningSecret(config), ttlSeconds: config.downloadUrlTtlSeconds },
    },
  };
};
