import type { ReadModel } from '../app/read-models';
import { streamCategory } from '../domain/ids';
import {
  evolvePublication,
  type PublicationEvent,
  type PublicationState,
  type PublishedRender,
  type PublicationStarted,
} from '../domain/publication';
import type { StoredEvent } from '../ports/event-store';
import type { Doc } from '../ports/read-store';

/**
 * The `publications` read model (issue 21): one document per publication (a composition as one
 * media type), made by the domain's own `evolve`. Read by slug (the share page, GET
 * /published_projects/{slug}) and by project (project detail `publishes`).
 *
 * It says what the newest publish job is (`started.job_id`), not whether that job ended: a
 * reader that finds no render looks the job up in `jobs` to tell `processing` from `failed`
 * (`publicationReadState`).
 */

export const PUBLICATIONS = 'publications';

/** A document of the model. */
export type PublicationDoc = Doc & {
  readonly slug: string;
  readonly project_id: string;
  readonly drive_id: string;
  readonly composition_id: string;
  readonly started: PublicationStarted['data'];
  readonly render: PublishedRender | null;
  readonly published_at: string | null;
  /** The newest start or render. */
  readonly updated_at: string;
};

export function evolvePublicationDoc(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as PublicationEvent;
  const d = doc as PublicationDoc | null;
  const before: PublicationState = d
    ? { exists: true, started: d.started, render: d.render, published_at: d.published_at }
    : { exists: false };
  const after = evolvePublication(before, event);
  if (!after.exists) return doc;
  const updated = [after.started.started_at, after.render?.rendered_at ?? ''].sort().at(-1)!;
  const out: PublicationDoc = {
    _id: after.started.publication_id,
    _rev: stored.revision,
    slug: after.started.slug,
    project_id: after.started.project_id,
    drive_id: after.started.drive_id,
    composition_id: after.started.composition_id,
    started: after.started,
    render: after.render,
    published_at: after.published_at,
    updated_at: updated,
  };
  return out;
}

export const publicationsModel: ReadModel = {
  name: PUBLICATIONS,
  version: 1,
  handles: new Set(['PublicationStarted', 'PublicationRendered'] satisfies PublicationEvent['type'][]),
  docId: (e) => (streamCategory(e.streamId) === 'publication' ? e.streamId.slice('publication-'.length) : null),
  evolve: evolvePublicationDoc,
  indexes: [['slug'], ['project_id']],
};
