import type { IncomingMessage, ServerResponse } from 'node:http';
import type Koa from 'koa';

/**
 * One port for both APIs, as the distributed gateway does it: reads (GET, HEAD) go to the query
 * API, everything else to the command API.
 */
export function routeByMethod(command: Koa, query: Koa) {
  const toCommand = command.callback();
  const toQuery = query.callback();
  return (req: IncomingMessage, res: ServerResponse) => (req.method === 'GET' || req.method === 'HEAD' ? toQuery : toCommand)(req, res);
}
