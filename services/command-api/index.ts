import { listen } from '../../lib/http/listen';
import { createApp, type CommandApiDeps } from './app';

export { createApp };
export type { CommandApiDeps };

/** Starts the command API on `port`. */
export async function start(deps: CommandApiDeps & { port: number; maxConnections?: number }) {
  const http = await listen(createApp(deps), deps.port, undefined, { maxConnections: deps.maxConnections });
  deps.logger.info({ port: deps.port }, 'command-api listening');
  return { stop: http.close };
}
