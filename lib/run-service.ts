import type { Logger } from 'pino';
import { ConfigError, effectiveConfig, loadConfig, type Config } from './config';
import { createLogger } from './logger';

/**
 * The shell around a service's composition root: load configuration (a bad value stops start-up
 * naming the variable), start, and on SIGTERM/SIGINT stop in order and exit. A second signal
 * exits at once.
 */
/**
 * What a consumer that can no longer consume calls: log it, and exit so that the orchestrator
 * (or the all-in-one supervisor) starts the process again.
 */
export const exitOnFatal =
  (logger: Logger, before?: (err: Error) => void) =>
  (err: Error): void => {
    before?.(err);
    logger.fatal({ err }, 'a consumer can no longer consume; exiting so that it is restarted');
    setTimeout(() => process.exit(1), 100).unref();
  };

export function runService(name: string, start: (config: Config, logger: Logger) => Promise<() => Promise<void>>): void {
  let logger: Logger | undefined;
  // Whatever this process (or a child: the worker, ffmpeg) creates is its user's alone: DATA_DIR
  // holds every tenant's media and the event store. Adapters also set modes themselves (private-files.ts).
  process.umask(0o077);
  (async () => {
    const config = loadConfig();
    logger = createLogger(config.logLevel, name);
    const stop = await start(config, logger);
    announce(name, config, logger);
    let stopping = false;
    const onSignal = (signal: string) => {
      if (stopping) process.exit(1);
      stopping = true;
      logger!.info({ signal }, 'shutting down');
      stop().then(
        () => process.exit(0),
        (err) => (logger!.error({ err }, 'error while stopping'), process.exit(1)),
      );
    };
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
  })().catch((err) => {
    if (err instanceof ConfigError) console.error(err.message);
    else if (logger) logger.fatal({ err }, 'failed to start');
    else console.error(err);
    process.exit(1);
  });
}

/** The processes that import media, and so transcribe it. */
const TRANSCRIBING = new Set(['serve', 'processors']);

/**
 * The start-up lines: what the process runs with, and a warning when imports will not be
 * transcribed (search and transcripts then find nothing, and nothing else says why). A supervised
 * child (the all-in-one worker) says nothing: its parent did.
 */
function announce(name: string, config: Config, logger: Logger): void {
  if (name === 'worker' || name.startsWith('worker ')) return;
  logger.info({ config: effectiveConfig(config) }, `${name} started`);
  if (TRANSCRIBING.has(name) && config.transcriber.kind === 'none') {
    logger.warn(
      'transcription is off (TRANSCRIBER=none): imported media gets no transcript, search finds no spoken words, and each ' +
        'file\'s media_status says transcript "skipped". Set TRANSCRIBER=openai with TRANSCRIBER_URL (any OpenAI-compatible ' +
        'server, e.g. a self-hosted Whisper) or TRANSCRIBER=pocketsphinx (README: Transcription)',
    );
  }
}
