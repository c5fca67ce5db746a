import { keptTranscripts } from '../../../lib/app/transcripts';
import { modelCompositionOf } from '../../../lib/domain/agent/apply-edit';
import type { ModelComposition, ModelMedia, ProjectModel } from '../../../lib/domain/agent/edits';
import type { Word } from '../../../lib/domain/edl';
import { notFound } from '../../../lib/domain/errors';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { ProcessorHandlers } from '../handlers';

/** Reads a project as the tools see it: its media with their transcripts and its compositions at their stream revisions. */
export type ProjectModelLoader = (projectId: string) => Promise<ProjectModel>;

/**
 * Parsed transcripts, kept per blob store across turns (a key names its bytes, so a kept one is
 * never stale): the next turn on a project parses nothing again (an hour is ~1 MB of JSON, ~15 ms).
 */
const transcriptsByStore = new WeakMap<BlobStore, (key: string) => Promise<readonly Word[]>>();
const transcriptsOf = (blobs: BlobStore) => {
  let kept = transcriptsByStore.get(blobs);
  if (!kept) transcriptsByStore.set(blobs, (kept = keptTranscripts(blobs)));
  return kept;
};

export function projectModelLoader(deps: { on: ProcessorHandlers; blobs: BlobStore }): ProjectModelLoader {
  const load = transcriptsOf(deps.blobs);
  return async (projectId) => {
    const { state } = await deps.on.projects.load(projectId);
    if (!state.exists) throw notFound(`project ${projectId} no longer exists`);
    const media: ModelMedia[] = [];
    for (const [ref, file] of state.media) {
      if (file.duration_seconds === null) continue; // an image is no clip
      const words: readonly Word[] = file.transcript ? await load(file.transcript.transcript_key) : [];
      media.push({ ref, duration: file.duration_seconds, has_video: file.has_video, words });
    }
    const compositions: ModelComposition[] = [];
    for (const entry of state.compositions) {
      const { state } = await deps.on.compositions.load(entry.composition_id);
      // Not there: listed, not yet created (an import still running), or deleted.
      const c = modelCompositionOf(state);
      if (c) compositions.push(c);
    }
    return { project_id: projectId, media, compositions };
  };
}
