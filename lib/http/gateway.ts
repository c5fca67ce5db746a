import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpApp } from './app';

/**
 * The web pages' forms: sign-in and sign-out change only the browser's cookie; the partner
 * import page's form belongs with its page (it starts the import through lib/app, as the
 * command API would). The exports (issue 22) are POSTs for their options but only read.
 */
const QUERY_SIDE_POSTS = new Set(['/login', '/logout', '/import', '/v1/export/timeline', '/v1/export/transcript']);

/**
 * One port for both APIs, as the distributed gateway does it: reads (GET, HEAD) and the web
 * pages' forms go to the query API, everything else to the command API.
 */
export function routeByMethod(command: HttpApp, query: HttpApp) {
  const toCommand = command.callback();
  const toQuery = query.callback();
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    const read = req.method === 'GET' || req.method === 'HEAD' || (req.method === 'POST' && QUERY_SIDE_POSTS.has(path));
    return (read ? toQuery : toCommand)(req, res);
  };
}
