import { hostname } from 'node:os';
import { join } from 'node:path';
import { createLocalUploadStore } from '../../lib/adapters/local/upload-store';
import type { Logger } from 'pino';
import { openAgentCatalog } from '../../lib/adapters/agent/catalog-file';
import { openMedia } from '../../lib/adapters/from-config';
import { randomIds, systemClock } from '../../lib/adapters/system/clock';
import { createBalances } from '../../lib/app/balances';
import type { Config } from '../../lib/config';
import type { EventLog } from '../../lib/ports/event-log';
import type { EventStore } from '../../lib/ports/event-store';
import type { ReadStore } from '../../lib/ports/read-store';
import type { JobObserver } from './job-runner';
import type { ProcessorsDeps } from './index';
import { agentModels, planlessBuiltin, toolsetOf } from './agent';

/**
 * The agent's tools and builtin planner (issue 20 items 5, 6) are listed here when they land;
 * until then the toolset is empty and the builtin model changes nothing.
 */
function agentFromConfig(config: Config): ProcessorsDeps['agent'] {
  const toolset = toolsetOf([]);
  const llm = config.agent.llmUrl ? { url: config.agent.llmUrl, apiKey: config.agent.llmApiKey } : null;
  return { toolset, modelFor: agentModels(openAgentCatalog(config.agent), { llm, builtin: planlessBuiltin(toolset) }) };
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
    balances: createBalances({ store: stores.store, clock: systemClock, ids: randomIds }),
    webUrl: config.webUrl,
    mediaMaxBytes: config.mediaMaxBytes,
    downloadTimeoutMs: config.mediaDownloadTimeoutSeconds * 1000,
    concurrency: config.concurrency,
    agent: agentFromConfig(config),
  };
};
