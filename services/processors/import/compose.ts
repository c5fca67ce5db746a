import { compositionCandidates } from '../../../lib/domain/ids';
import type { Clip } from '../../../lib/domain/edl';
import type { ImportPlan } from '../../../lib/domain/import';
import type { CompositionEntry, ProjectState } from '../../../lib/domain/project';
import type { ImportWorkDeps } from './work';
import type { JobContext } from '../job-runner';

/**
 * Compositions an import makes. Each is listed on the project stream first (which keeps short
 * ids unique in the project), then created on its own stream. Both steps are idempotent by
 * origin, so a retried job that crashed between them finishes the composition it began.
 */

export const DEFAULT_SIZE = { width: 1920, height: 1080 } as const;

export type CompositionSpec = ImportPlan['compositions'][number];

export async function createComposition(
  deps: ImportWorkDeps,
  ctx: JobContext,
  project: Extract<ProjectState, { exists: true }>,
  origin: string,
  spec: { name: string; clips: readonly Clip[]; width: number; height: number },
): Promise<{ entry: CompositionEntry; project: ProjectState }> {
  const metadata = { partition_key: ctx.job.project_id, drive_id: ctx.job.drive_id, causation_id: ctx.job.job_id };
  const now = () => deps.clock.now().toISOString();
  // Deterministic candidates: a retry proposes the same ids, and the first free short id wins.
  const candidateIds = compositionCandidates(origin);
  const listed = await deps.on.projects.handle(
    ctx.job.project_id,
    { type: 'AddComposition', origin, name: spec.name, candidateIds, now: now() },
    { newId: deps.ids.uuidv7, metadata },
  );
  const state = listed.state;
  const entry = state.exists ? state.compositions.find((c) => c.origin === origin) : undefined;
  if (!entry) throw new Error(`composition ${origin} was not listed in project ${ctx.job.project_id}`);
  await deps.on.compositions.handle(
    entry.composition_id,
    {
      type: 'CreateComposition',
      composition: {
        project_id: project.project.project_id,
        composition_id: entry.composition_id,
        short_id: entry.short_id,
        name: spec.name,
        clips: spec.clips,
        width: spec.width,
        height: spec.height,
        origin,
      },
      now: now(),
    },
    { newId: deps.ids.uuidv7, metadata },
  );
  return { entry, project: state };
}

/** Each clip plays its media whole; media that did not import, or has no duration (an image), is left out. */
export function wholeClips(project: Extract<ProjectState, { exists: true }>, refs: readonly string[]): Clip[] {
  const clips: Clip[] = [];
  for (const ref of refs) {
    const seconds = project.media.get(ref)?.duration_seconds;
    if (seconds) clips.push({ media: ref, in: 0, out: seconds });
  }
  return clips;
}
