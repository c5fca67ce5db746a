import { loadTranscript } from '../../../lib/app/transcripts';
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
      const { state: c } = await deps.on.compositions.load(entry.composition_id);
      if (!c.exists) continue; // listed, not yet created (an import still running)
      compositions.push({
        composition_id: c.composition_id,
        short_id: c.short_id,
        name: c.name,
        revision: c.revision,
        clips: c.clips,
        markers: c.markers,
        // No audio settings yet on this composition model: the composition events of issue 20 add them.
        audio: { loudness_lufs: null, noise_reduction: false },
      });
    }
    return { project_id: projectId, media, compositions };
  };
}
