import { compositionDecider, type CompositionCommand } from '../domain/composition';
import { compositionDuration, type Word } from '../domain/edl';
import { AppError, conflict, forbidden, invalidInput, notFound } from '../domain/errors';
import { isUuid, streams } from '../domain/ids';
import { projectDecider, type CompositionEntry, type MediaFile } from '../domain/project';
import { deletedWords, rangesOfWords, transcriptText, transcriptWords } from '../domain/text-edit';
import type { BlobStore } from '../ports/blob-store';
import type { Clock, Ids } from '../ports/clock';
import type { EventMetadata, EventStore } from '../ports/event-store';
import { commandHandler, handleInBatch } from './command-handler';
import { wordsOfClips } from './composition-words';
import { projectEditedAppends } from './project-edits';
import type { Principal } from './tenancy';

/**
 * Edit by text, the write side (`PUT /v1/projects/{project_id}/compositions/{composition_id}/transcript`):
 * the words the text deleted are cut in one edit planned on the revision the client read, decided
 * on the composition's stream like an agent's turn. No credits: nothing is generated. Undone like
 * a turn, by reverting to the revision before.
 */

export type TextEditDeps = { store: EventStore; blobs: BlobStore; clock: Clock; ids: Ids };

/** The derived transcript as both routes answer it. */
export type TranscriptAnswer = {
  readonly project_id: string;
  readonly composition_id: string;
  readonly revision: number;
  readonly duration: number;
  readonly text: string;
  readonly words: ReturnType<typeof transcriptWords>;
};

export const transcriptAnswer = (
  ids: { project_id: string; composition_id: string },
  revision: number,
  duration: number,
  words: readonly Word[],
): TranscriptAnswer => ({ ...ids, revision, duration, text: transcriptText(words), words: transcriptWords(words) });

/**
 * A composition of the project by UUID or 5-character short id (the spec's third form, a project
 * URL, is the agent's resolver's; see the report of issue 20). 400 for neither form, 404 when the
 * project has no such composition.
 */
export function compositionOf<E extends { readonly short_id: string }>(entries: readonly E[], idOf: (e: E) => string, ref: string): E {
  const lower = ref.toLowerCase();
  let found: E | undefined;
  if (isUuid(ref)) found = entries.find((e) => idOf(e).toLowerCase() === lower);
  else if (/^[0-9a-f]{5}$/u.test(lower)) found = entries.find((e) => e.short_id === lower);
  else throw invalidInput(`composition_id ${JSON.stringify(ref.slice(0, 80))} is not a UUID or a short id (5 hex digits)`);
  if (!found) throw notFound(`composition ${ref} does not exist in this project`);
  return found;
}

/** The body's fields, checked once here: 400 naming the field. */
function checkBody(body: unknown): { text: string; revision: number } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalidInput('the body must be a JSON object with text and revision');
  const { text, revision, ...rest } = body as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw invalidInput(`${extra} is not a property of a text edit (text, revision)`);
  if (typeof text !== 'string') throw invalidInput('text is required: the transcript text with words deleted');
  if (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 0)
    throw invalidInput('revision is required: the non-negative integer revision the transcript was read at');
  return { text, revision };
}

/** Where a text's words come from: the project stream's media (its transcripts, a sequence's tracks). */
const sourcesOf = (media: ReadonlyMap<string, MediaFile>) => (ref: string) => {
  const m = media.get(ref);
  return m && { transcript_key: m.transcript?.transcript_key ?? null, tracks: m.tracks };
};

/** The text must have been read at the composition's revision: older is a conflict (read it again), newer does not exist. */
function checkRevision(revision: number, current: number): void {
  if (revision < current)
    throw conflict(`the composition moved on: the text was read at revision ${revision}, it is at ${current}; read it again`, 'moved_on');
  if (revision > current) throw invalidInput(`revision ${revision} does not exist (the composition is at revision ${current})`);
}

type Write = { readonly newId: () => string; readonly metadata: EventMetadata };

export function createTextEdits(deps: TextEditDeps) {
  const projects = commandHandler(deps.store, projectDecider, streams.project);
  const compositions = commandHandler(deps.store, compositionDecider, streams.composition);

  /** The project of the principal's drive and its composition, from their streams: 400, 403 or 404 as the project detail answers. */
  async function target(who: Principal, projectId: string, compositionRef: string) {
    if (!isUuid(projectId)) throw invalidInput(`project_id ${JSON.stringify(projectId.slice(0, 80))} is not a UUID`);
    const { state: project } = await projects.load(projectId.toLowerCase());
    if (!project.exists) throw notFound(`project ${projectId} does not exist`);
    if (project.project.drive_id !== who.driveId) throw forbidden(`project ${projectId} belongs to another drive`);
    const entry = compositionOf<CompositionEntry>(project.compositions, (c) => c.composition_id, compositionRef);
    const { state } = await compositions.load(entry.composition_id);
    if (!state.exists || state.deleted) throw notFound(`composition ${compositionRef} does not exist in this project`);
    const ids = { project_id: project.project.project_id, composition_id: entry.composition_id };
    return { ids, composition: state, sourceOf: sourcesOf(project.media) };
  }

  /**
   * Appends the edit to the composition, and after it in the same batch the project's
   * `ProjectEdited`. Planned on the revision read: if another edit lands first, the decider
   * refuses it (409) when it is decided again on the composition as it then is.
   */
  const cut = async (ids: { project_id: string; composition_id: string }, command: CompositionCommand, write: Write) => {
    const edited = { projectId: ids.project_id, jobId: null, now: command.now };
    const on = { handler: compositions, decider: compositionDecider, streamOf: streams.composition };
    return (
      await handleInBatch(deps.store, on, ids.composition_id, command, write, {
        after: (made) => projectEditedAppends(edited, made, write),
      })
    ).state;
  };

  return {
    async edit(who: Principal, projectId: string, compositionRef: string, body: unknown): Promise<TranscriptAnswer> {
      const { text, revision } = checkBody(body);
      const { ids, composition, sourceOf } = await target(who, projectId, compositionRef);
      checkRevision(revision, composition.revision);
      const words = await wordsOfClips(deps.blobs, sourceOf, composition.clips);
      const deleted = deletedWords(words, text);
      if (deleted instanceof AppError) throw deleted;
      const ranges = rangesOfWords(words, deleted);
      if (ranges.length === 0) return transcriptAnswer(ids, composition.revision, compositionDuration(composition.clips), words);
      const now = deps.clock.now().toISOString();
      const write = {
        newId: () => deps.ids.uuidv7(),
        metadata: { partition_key: ids.project_id, drive_id: who.driveId, user_id: who.userId },
      };
      const after = await cut(ids, { type: 'ApplyEdits', edits: [{ kind: 'cut', ranges }], planned_on: revision, now }, write);
      if (!after.exists) throw new Error('the composition vanished while it was edited');
      const remaining = await wordsOfClips(deps.blobs, sourceOf, after.clips);
      return transcriptAnswer(ids, after.revision, compositionDuration(after.clips), remaining);
    },
  };
}
