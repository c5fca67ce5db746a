import { decideNext } from '../../../lib/app/command-handler';
import { modelCompositionOf } from '../../../lib/domain/agent/apply-edit';
import type { CompositionEdit, ModelComposition, PlannedChange, ProjectModel } from '../../../lib/domain/agent/edits';
import { compositionDecider, type CompositionCommand, type CompositionState } from '../../../lib/domain/composition';
import type { RevisionChange } from '../../../lib/domain/conversation';
import { AppError, invalidInput } from '../../../lib/domain/errors';
import { compositionCandidates, shortIdOf, streams } from '../../../lib/domain/ids';
import { projectDecider, type ProjectState } from '../../../lib/domain/project';
import type { EventMetadata, StreamAppend } from '../../../lib/ports/event-store';
import type { ProcessorHandlers } from '../handlers';
import { DEFAULT_SIZE } from '../import/compose';

/**
 * A turn's edits (STYLE §18: edits are plans, applied at a revision). Each tool call's changes are
 * decided at once on the states the turn holds, so the next call sees them, but nothing is
 * written: `appends()` is every append of the turn, each expecting the stream revision the turn
 * read, so a composition another writer moved meanwhile makes the whole commit fail (and the turn
 * is planned again), never a mixture. Each edit is the composition's `ApplyEdits`: one event per
 * edit (a cut of many ranges is one event), planned on a revision.
 */
export interface TurnEdits {
  /** Plans one tool call's changes on top of the earlier ones, all or none; resolves the project model as it then is. */
  plan(changes: readonly PlannedChange[]): ProjectModel;
  /** Every append of the turn so far. */
  appends(): StreamAppend[];
  /** The compositions the turn changed: revision before (null: made by the turn) and after. */
  revisions(): RevisionChange[];
}

type Held = {
  readonly state: CompositionState;
  readonly revision: number | null;
  readonly before: number | null;
  readonly appends: StreamAppend[];
};
type ProjectHeld = { readonly state: ProjectState; readonly revision: number | null; readonly appends: StreamAppend[] };

export type TurnEditsDeps = { on: ProcessorHandlers; newId: () => string; now: () => string; metadata: EventMetadata; jobId: string };

/** The turn's edits on `model`, read at the composition revisions the model names. */
export async function startTurnEdits(deps: TurnEditsDeps, model: ProjectModel): Promise<TurnEdits> {
  let held = new Map<string, Held>();
  for (const c of model.compositions) {
    const { state, revision } = await deps.on.compositions.load(c.composition_id);
    // The model and the states planned on must be the same revision: what the tools read is what is edited.
    if (revision !== c.revision)
      throw new AppError('unavailable', `composition ${c.composition_id} changed while the turn read it`, { retriable: true });
    held.set(c.composition_id, { state, revision, before: revision, appends: [] });
  }
  const loaded = await deps.on.projects.load(model.project_id);
  await holdDeleted(deps, loaded.state, held);
  let project: ProjectHeld = { ...loaded, appends: [] };
  let current = model;
  const write = { newId: deps.newId, metadata: deps.metadata };

  const decideComposition = (h: Held, id: string, command: CompositionCommand): Held => {
    const next = decideNext(streams.composition(id), compositionDecider, h.state, h.revision, command, write);
    return { ...h, state: next.state, revision: next.revision, appends: [...h.appends, ...next.appends] };
  };

  function planOne(change: PlannedChange, draft: Map<string, Held>, p: ProjectHeld): ProjectHeld {
    if ('create' in change) {
      const c = change.create;
      const origin = `${deps.jobId}#agent:${c.composition_id}`;
      // Candidates made from the origin, as an import's are: the id a tool proposes is time-ordered
      // (UUIDv7), so its short id (its first five hex digits) is the same for days, and a second
      // composition made by the agent found it taken. The plan reads the id given below.
      const add = { type: 'AddComposition' as const, origin, name: c.name, candidateIds: compositionCandidates(origin), now: deps.now() };
      const listed = decideNext(streams.project(model.project_id), projectDecider, p.state, p.revision, add, write);
      const entry = listed.state.exists ? listed.state.compositions.find((e) => e.origin === origin) : undefined;
      if (!entry) throw invalidInput(`a composition with short id ${shortIdOf(c.composition_id)} already exists in the project`);
      const composition = {
        project_id: model.project_id,
        composition_id: entry.composition_id,
        short_id: entry.short_id,
        name: c.name,
        clips: c.clips,
        markers: c.markers,
        ...DEFAULT_SIZE,
        origin,
      };
      const empty: Held = { state: { exists: false }, revision: null, before: null, appends: [] };
      draft.set(
        entry.composition_id,
        decideComposition(empty, entry.composition_id, { type: 'CreateComposition', composition, now: deps.now() }),
      );
      return { state: listed.state, revision: listed.revision, appends: [...p.appends, ...listed.appends] };
    }
    const h = draft.get(change.composition_id);
    if (!h) throw invalidInput(`composition ${change.composition_id} is not a composition of the project`);
    if (h.revision === null) throw invalidInput(`composition ${change.composition_id} does not exist yet`);
    draft.set(change.composition_id, decideComposition(h, change.composition_id, applyEdit(change.edit, h.revision, deps.now())));
    return p;
  }

  return {
    plan(changes) {
      const draft = new Map(held);
      let p = project;
      for (const change of changes) p = planOne(change, draft, p);
      held = draft;
      project = p;
      current = modelOf(current, held, project);
      return current;
    },
    appends: () => [...project.appends, ...[...held.values()].flatMap((h) => h.appends)],
    revisions: () =>
      [...held.entries()]
        .filter(([, h]) => h.appends.length > 0)
        .map(([composition_id, h]) => ({ composition_id, before: h.before, after: h.revision! })),
  };
}

/**
 * The project's deleted compositions, which the model leaves out but a revert brings back (undo of
 * a turn that deleted one). The project still lists them: deletion is the composition's own event.
 */
async function holdDeleted(deps: TurnEditsDeps, project: ProjectState, held: Map<string, Held>): Promise<void> {
  if (!project.exists) return;
  for (const { composition_id } of project.compositions) {
    if (held.has(composition_id)) continue;
    const { state, revision } = await deps.on.compositions.load(composition_id);
    if (state.exists && state.deleted) held.set(composition_id, { state, revision, before: revision, appends: [] });
  }
}

/**
 * One tool call's edit of a composition, decided on the state the turn holds: planned on its
 * revision there (the turn's earlier edits of it included), so the decider refuses nothing the
 * turn itself moved, and the appends expect the revision the turn read.
 */
const applyEdit = (edit: CompositionEdit, plannedOn: number, now: string): CompositionCommand => ({
  type: 'ApplyEdits',
  edits: [edit],
  planned_on: plannedOn,
  now,
});

/** The project model after the held states: compositions in project order, each at its planned revision. */
function modelOf(model: ProjectModel, held: ReadonlyMap<string, Held>, project: ProjectHeld): ProjectModel {
  const order = project.state.exists
    ? project.state.compositions.map((c) => c.composition_id)
    : model.compositions.map((c) => c.composition_id);
  const compositions: ModelComposition[] = [];
  for (const id of order) {
    const h = held.get(id);
    const c = h && modelCompositionOf(h.state);
    if (c) compositions.push({ ...c, revision: h.revision! });
  }
  return { ...model, compositions };
}
