import { appendInOrder, decideNext, type CommandHandler } from '../../../lib/app/command-handler';
import { compositionDecider, type CompositionCommand } from '../../../lib/domain/composition';
import type { Decider } from '../../../lib/domain/decider';
import { AppError } from '../../../lib/domain/errors';
import { candidatesUntilFree, streams } from '../../../lib/domain/ids';
import type { Clip } from '../../../lib/domain/edl';
import type { ImportPlan, LeftOutClip } from '../../../lib/domain/import';
import { projectDecider, type CompositionEntry, type ProjectCommand, type ProjectState } from '../../../lib/domain/project';
import type { EventMetadata, StreamAppend } from '../../../lib/ports/event-store';
import type { ImportWorkDeps } from './work';
import type { JobContext } from '../job-runner';

/**
 * Compositions an import makes. Each is listed on the project stream first (which keeps short
 * ids unique in the project), then created on its own stream, in one commit. Both steps are
 * idempotent by origin, so a retried job that crashed between them finishes the composition it began.
 */

export const DEFAULT_SIZE = { width: 1920, height: 1080 } as const;

export type CompositionSpec = ImportPlan['compositions'][number];

/** Tries of `createComposition` before the attempt fails (and is retried): each lost to a stream another writer moved. */
const COMPOSE_TRIES = 10;

/**
 * Lists the composition on the project and creates it on its own stream in one commit
 * (`appendInOrder`; one awaited append after the other were two), behind the job's fence. A
 * stream that moved meanwhile decides both again from the streams as they are: what was made
 * stays, each step is idempotent.
 */
export async function createComposition(
  deps: Pick<ImportWorkDeps, 'ids' | 'clock' | 'store' | 'on'>,
  ctx: { readonly job: Pick<JobContext['job'], 'job_id' | 'project_id' | 'drive_id'>; readonly fence: JobContext['fence'] },
  project: Extract<ProjectState, { exists: true }>,
  origin: string,
  spec: { name: string; clips: readonly Clip[]; width: number; height: number },
): Promise<{ entry: CompositionEntry; project: ProjectState }> {
  const write = {
    newId: deps.ids.uuidv7,
    metadata: { partition_key: ctx.job.project_id, drive_id: ctx.job.drive_id, causation_id: ctx.job.job_id },
  };
  const now = deps.clock.now().toISOString();
  // Deterministic candidates: a retry proposes the same ids, and the first free short id wins.
  const taken = new Set(project.compositions.map((c) => c.short_id));
  const list: ProjectCommand = { type: 'AddComposition', origin, name: spec.name, candidateIds: candidatesUntilFree(origin, taken), now };
  for (let tries = 0; tries < COMPOSE_TRIES; tries++) {
    const listing = await decideOn(deps.on.projects, projectDecider, streams.project, ctx.job.project_id, list, write);
    const state = listing.state;
    const entry = state.exists ? state.compositions.find((c) => c.origin === origin) : undefined;
    if (!entry) throw new Error(`composition ${origin} was not listed in project ${ctx.job.project_id}`);
    const composition = {
      project_id: project.project.project_id,
      composition_id: entry.composition_id,
      short_id: entry.short_id,
      name: spec.name,
      clips: spec.clips,
      width: spec.width,
      height: spec.height,
      origin,
    };
    const create: CompositionCommand = { type: 'CreateComposition', composition, now };
    const creating = await decideOn(deps.on.compositions, compositionDecider, streams.composition, entry.composition_id, create, write);
    const appends = [...listing.appends, ...creating.appends];
    // Behind the job's fence: a job cancelled meanwhile makes no composition.
    const results = appends.length === 0 ? [] : await appendInOrder(deps.store, [await ctx.fence(), ...appends]);
    if (results.every((r) => r.ok)) return { entry, project: state };
  }
  throw new AppError('unavailable', `too many concurrent changes while creating composition ${origin}; trying again`, { retriable: true });
}

/** The stream's state after `command`, and its append (none when the command decides nothing); a refusal throws. */
async function decideOn<C, E extends { type: string; data: object }, S>(
  handler: CommandHandler<C, E, S>,
  decider: Decider<C, E, S>,
  streamOf: (id: string) => string,
  id: string,
  command: C,
  write: { newId: () => string; metadata: EventMetadata },
): Promise<{ state: S; appends: StreamAppend[] }> {
  const { state, revision } = await handler.load(id);
  return decideNext(streamOf(id), decider, state, revision, command, write);
}

/**
 * Each clip plays its media whole; media that did not import, or has no duration (an image), is
 * left out, and said so.
 */
export function wholeClips(
  project: Extract<ProjectState, { exists: true }>,
  refs: readonly string[],
): { clips: Clip[]; leftOut: LeftOutClip[] } {
  const clips: Clip[] = [];
  const leftOut: LeftOutClip[] = [];
  for (const ref of refs) {
    const media = project.media.get(ref);
    if (media?.duration_seconds) clips.push({ media: ref, in: 0, out: media.duration_seconds });
    else leftOut.push({ media: ref, reason: media ? 'image' : 'not_imported' });
  }
  return { clips, leftOut };
}
