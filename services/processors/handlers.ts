import { commandHandler } from '../../lib/app/command-handler';
import { compositionDecider } from '../../lib/domain/composition';
import { conversationDecider } from '../../lib/domain/conversation';
import { streams } from '../../lib/domain/ids';
import { jobDecider } from '../../lib/domain/job';
import { projectDecider } from '../../lib/domain/project';
import { publicationDecider } from '../../lib/domain/publication';
import { driveDecider } from '../../lib/domain/tenancy';
import type { EventStore } from '../../lib/ports/event-store';

/** The handlers of the streams the processors read and write: built once per store, in `start`. */
export const processorHandlers = (store: EventStore) => ({
  jobs: commandHandler(store, jobDecider, streams.job),
  projects: commandHandler(store, projectDecider, streams.project),
  compositions: commandHandler(store, compositionDecider, streams.composition),
  conversations: commandHandler(store, conversationDecider, streams.conversation),
  publications: commandHandler(store, publicationDecider, streams.publication),
  drives: commandHandler(store, driveDecider, streams.drive),
});

export type ProcessorHandlers = ReturnType<typeof processorHandlers>;
