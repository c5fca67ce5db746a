import { invalidInput, notFound } from './errors';
import { isUuid } from './ids';

/**
 * The one reading of a request's `composition_id` (SPEC: Composition identifiers), for agent,
 * publish and export: a full UUID, a 5-character short id, or a project URL
 * `{WEB_URL}/<project_id>/<short_id>`. Pure: the project's compositions and WEB_URL are inputs.
 * A malformed value, or a URL naming another project or another site, is `invalid_input`; a
 * well-formed one that names no composition of the project is `not_found`.
 */

export type CompositionListing = { readonly composition_id: string; readonly short_id: string };

const SHORT_ID = /^[0-9a-f]{5}$/i;

export function resolveCompositionRef(
  ref: string,
  project: { readonly project_id: string; readonly compositions: readonly CompositionListing[] },
  webUrl: string,
  field = 'composition_id',
): string {
  const byShortId = (shortId: string) => {
    const found = project.compositions.find((c) => c.short_id === shortId.toLowerCase());
    if (!found) throw notFound(`${field}: project ${project.project_id} has no composition with short id ${shortId}`);
    return found.composition_id;
  };
  if (isUuid(ref)) {
    const found = project.compositions.find((c) => c.composition_id === ref.toLowerCase());
    if (!found) throw notFound(`${field}: composition ${ref} does not exist in project ${project.project_id}`);
    return found.composition_id;
  }
  if (SHORT_ID.test(ref)) return byShortId(ref);
  if (/^https?:\/\//i.test(ref)) return byShortId(shortIdOfUrl(ref, project.project_id, webUrl, field));
  throw invalidInput(`${field} must be a composition UUID, a short id (5 hex digits), or a project URL ${webUrl}/<project_id>/<short_id>`);
}

/** The short id a project URL names, after checking it is this site's URL of this project. */
function shortIdOfUrl(ref: string, projectId: string, webUrl: string, field: string): string {
  const shape = `${field} as a URL must be ${webUrl}/<project_id>/<short_id>`;
  let url: URL;
  let base: URL;
  try {
    url = new URL(ref);
    base = new URL(webUrl);
  } catch {
    throw invalidInput(shape);
  }
  const basePath = base.pathname.replace(/\/+$/, '');
  if (url.origin !== base.origin || !url.pathname.startsWith(`${basePath}/`) || url.search || url.hash) throw invalidInput(shape);
  const parts = url.pathname
    .slice(basePath.length + 1)
    .replace(/\/$/, '')
    .split('/');
  if (parts.length !== 2 || !isUuid(parts[0]) || !SHORT_ID.test(parts[1])) throw invalidInput(shape);
  if (parts[0].toLowerCase() !== projectId.toLowerCase()) {
    throw invalidInput(`${field} names a composition of project ${parts[0]}, not of project ${projectId}`);
  }
  return parts[1];
}

/**
 * The composition a request acts on (publish and export): the one `ref` names in any of the three
 * forms, or, without `ref`, the first that has content, skipping the empty placeholder that leads
 * projects made by an agent or import job; a project with none at all is `not_found`.
 */
export function chooseComposition<C extends { readonly id: string; readonly short_id: string }>(
  compositions: readonly C[],
  ref: string | undefined,
  context: { readonly projectId: string; readonly webUrl: string; readonly hasContent: (c: C) => boolean },
): C {
  if (ref !== undefined) {
    const listing = compositions.map((c) => ({ composition_id: c.id, short_id: c.short_id }));
    const id = resolveCompositionRef(ref, { project_id: context.projectId, compositions: listing }, context.webUrl);
    return compositions.find((c) => c.id === id)!;
  }
  const chosen = compositions.find(context.hasContent) ?? compositions[0];
  if (!chosen) throw notFound(`project ${context.projectId} has no composition`);
  return chosen;
}
