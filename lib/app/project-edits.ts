import { streamCategory, streams } from '../domain/ids';
import { recordEdit } from '../domain/project';
import type { EventMetadata, StreamAppend } from '../ports/event-store';

/**
 * What records on a project's stream that `edits` changed some of its compositions
 * (`ProjectEdited`, for the project's `updated_at`): one append expecting any revision, to go in
 * the same batch right after them, so it is written with them and adds no conflict point. None
 * when they change no composition.
 */
export function projectEditedAppends(
  edit: { readonly projectId: string; readonly jobId: string | null; readonly now: string },
  edits: readonly StreamAppend[],
  write: { readonly newId: () => string; readonly metadata: EventMetadata },
): StreamAppend[] {
  const compositionIds = edits
    .filter((a) => a.events.length > 0 && streamCategory(a.streamId) === 'composition')
    .map((a) => a.streamId.slice('composition-'.length));
  if (compositionIds.length === 0) return [];
  const { type, data } = recordEdit({ ...edit, compositionIds });
  const event = { id: write.newId(), type, data: data as unknown as Record<string, unknown>, metadata: write.metadata };
  return [{ streamId: streams.project(edit.projectId), events: [event], expected: 'any' }];
}
