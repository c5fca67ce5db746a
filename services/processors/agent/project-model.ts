import { loadTranscript } from '../../../lib/app/transcripts';
import { modelCompositionOf } from '../../../lib/domain/agent/apply-edit';
import type { ModelComposition, ModelMedia, ProjectModel } from '../../../lib/domain/agent/edits';
import type { Word } from '../../../lib/domain/edl';
import { notFound } from '../../../lib/domain/errors';
import type { BlobStore } from '../../../lib/ports/blob-store';
import type { ProcessorHandlers } from '../handlers';

/** Reads a project as the tools see it: its media with their transcripts and its compositions at their stream revisions. */
export type ProjectModelLoader = (projectId: string) => Promise<ProjectModel>;

export function projectModelLoader(deps: { on: ProcessorHandlers; blobs: BlobStore }): ProjectModelLoader {
  return async (projectId) => {
    const { state } = await deps.on.projects.load(projectId);
    if (!state.exists) throw notFound(`project ${projectId} no longer exists`);
    const media: ModelMedia[] = [];
    for (const [ref, file] of state.media) {
      if (file.duration_seconds === null) continue; // an image is no clip
      const words: Word[] = file.transcript ? await loadTranscript(deps.blobs, file.transcript.transcript_key) : [];
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
