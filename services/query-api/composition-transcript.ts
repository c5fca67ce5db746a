import type Router from '@koa/router';
import { compositionWords } from '../../lib/app/composition-words';
import { compositionOf, transcriptAnswer } from '../../lib/app/text-edits';
import type { ApiContext } from '../../lib/http/middleware';
import type { BlobStore } from '../../lib/ports/blob-store';
import { loadProjectView, type ProjectViewDeps } from './project-view';

/**
 * `GET /v1/projects/{project_id}/compositions/{composition_id}/transcript` (an extension, issue 20
 * item 11): the derived transcript as words with ids and composition times, its text, and the
 * composition's revision, which an edit by text (`PUT`, the command API's) is planned on.
 */
export function mountCompositionTranscript(v1: Router, deps: ProjectViewDeps & { blobs: BlobStore }): void {
  v1.get('/projects/:project_id/compositions/:composition_id/transcript', async (ctx) => {
    const { auth } = (ctx as unknown as ApiContext).state;
    const view = await loadProjectView(deps, auth, ctx.params.project_id);
    const composition = compositionOf(view.compositions, (c) => c.id, ctx.params.composition_id);
    const words = await compositionWords(deps.blobs, view.project, composition.clips);
    const ids = { project_id: view.project.id, composition_id: composition.id };
    ctx.body = transcriptAnswer(ids, composition.revision, composition.duration, words);
  });
}
