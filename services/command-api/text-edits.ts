import type Router from '@koa/router';
import { createTextEdits, type TextEditDeps } from '../../lib/app/text-edits';
import type { ApiContext } from '../../lib/http/middleware';

/**
 * `PUT /v1/projects/{project_id}/compositions/{composition_id}/transcript` (an extension, issue 20
 * item 11): edit by text. A command (it appends), so it lives here; its `GET` is the query API's.
 * The 2xx is noted for read-your-writes like every command's, so the next read shows the cut.
 */
export function mountTextEdits(v1: Router, deps: TextEditDeps): void {
  const edits = createTextEdits(deps);
  v1.put('/projects/:project_id/compositions/:composition_id/transcript', async (ctx) => {
    const { auth, log } = (ctx as unknown as ApiContext).state;
    const { project_id, composition_id } = ctx.params;
    const answer = await edits.edit(auth, project_id, composition_id, (ctx.request as { body?: unknown }).body);
    log.info({ project_id, composition_id: answer.composition_id, revision: answer.revision }, 'composition edited by text');
    ctx.body = answer;
  });
}
