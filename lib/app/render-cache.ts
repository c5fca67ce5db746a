import { createHash } from 'node:crypto';
import { renderIdentity, renderShape, type RenderSpec } from '../domain/render-plan';
import type { BlobStore } from '../ports/blob-store';
import type { RenderOptions, Renderer } from '../ports/renderer';

/**
 * Renders are cached as blobs named by what they are made of (issue 21): the same clips, sources
 * and settings make the same key, so an unchanged republish finds its render and runs no ffmpeg.
 * A blob appears whole or not at all (the renderer renames a finished file into place), so a
 * blob that exists is a finished render. Two publishes of one key at once both render and the
 * second rename wins with the same content.
 */

/** sha256 (hex) of the render's identity: clips, source blobs and settings. */
export const renderCacheKey = (spec: RenderSpec): string => createHash('sha256').update(renderIdentity(spec)).digest('hex');

/** The blob a render of `spec` is kept in, beside the project's media. */
export const renderBlobKey = (scope: { driveId: string; projectId: string }, spec: RenderSpec): string =>
  `${scope.driveId}/${scope.projectId}/render-${renderCacheKey(spec)}`;

export type CachedRender = {
  readonly blobKey: string;
  readonly cached: boolean;
  readonly durationSeconds: number;
  /** The picture's size; null for Audio. */
  readonly width: number | null;
  readonly height: number | null;
};

/** The render of `spec`: the cached blob when there is one, else rendered into it now. */
export async function renderCached(
  deps: { renderer: Renderer; blobs: Pick<BlobStore, 'exists' | 'localPath'> },
  scope: { driveId: string; projectId: string },
  spec: RenderSpec,
  options: RenderOptions = {},
): Promise<CachedRender> {
  const blobKey = renderBlobKey(scope, spec);
  if (await deps.blobs.exists(blobKey)) {
    options.onProgress?.(1);
    return { blobKey, cached: true, ...renderShape(spec) };
  }
  const outcome = await deps.renderer.render(spec, deps.blobs.localPath(blobKey), options);
  return { blobKey, cached: false, durationSeconds: outcome.durationSeconds, width: outcome.width ?? null, height: outcome.height ?? null };
}
