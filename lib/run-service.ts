import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config';
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
