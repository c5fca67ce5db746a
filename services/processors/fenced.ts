import { appendInOrder, decideNext, type CommandHandler, type Loaded } from '../../lib/app/command-handler';
import type { Decider } from '../../lib/domain/decider';
import { AppError } from '../../lib/domain/errors';
import type { EventMetadata, EventStore, StreamAppend } from '../../lib/ports/event-store';

/** Tries before the attempt fails (and is retried): each lost to a stream another writer moved. */
const TRIES = 10;

/**
 * A command on a stream the job changes (its project, its publication), behind the job's fence
 * (JobContext.fence): decided on the stream as read and appended after the fence in one batch, so
 * a job cancelled meanwhile changes nothing; a stream that moved decides it again (the next fence
 * throws once the job is cancelled). A refusal throws. Resolves the stream as it then is.
 */
export async function handleFenced<C, E extends { type: string; data: object }, S>(
  deps: { readonly store: EventStore },
  on: { readonly handler: CommandHandler<C, E, S>; readonly decider: Decider<C, E, S>; readonly streamOf: (id: string) => string },
  id: string,
  command: C,
  write: { readonly newId: () => string; readonly metadata: EventMetadata },
  fence: () => Promise<StreamAppend>,
): Promise<Loaded<S>> {
  for (let tries = 0; tries < TRIES; tries++) {
    const { state, revision } = await on.handler.load(id);
    const next = decideNext(on.streamOf(id), on.decider, state, revision, command, write);
    if (next.appends.length === 0) return next;
    const results = await appendInOrder(deps.store, [await fence(), ...next.appends]);
    if (results.every((r) => r.ok)) return next;
  }
  throw new AppError('unavailable', `too many concurrent changes to ${on.streamOf(id)}; trying again`, { retriable: true });
}
