import type { BalanceEvent } from './balance';
import type { CompositionEvent } from './composition';
import type { ConversationEvent } from './conversation';
import type { DeliveryEvent } from './delivery';
import type { FolderEvent } from './folder';
import type { IdempotencyEvent } from './idempotency';
import type { ImportLinkEvent } from './import-link';
import type { JobEvent } from './job';
import type { ProjectEvent } from './project';
import type { PublicationEvent } from './publication';
import type { DriveEvent, TokenEvent } from './tenancy';

/** Every event the domain writes: each aggregate's union. A new aggregate adds its union here. */
export type DomainEvent =
  | JobEvent
  | ProjectEvent
  | CompositionEvent
  | FolderEvent
  | DriveEvent
  | TokenEvent
  | DeliveryEvent
  | ImportLinkEvent
  | BalanceEvent
  | IdempotencyEvent
  | ConversationEvent
  | PublicationEvent;

/**
 * Every event type by name, at run time. Typed as a record over the union, so an event type
 * added to a domain union without an entry here does not compile; the Avro codec's test then
 * checks each has a schema that round-trips (test/unit/avro-codec.test.ts).
 */
const TYPES: { readonly [K in DomainEvent['type']]: true } = {
  JobQueued: true,
  UploadReceived: true,
  UploadProgressed: true,
  JobStarted: true,
  JobLeaseRenewed: true,
  JobProgressed: true,
  MediaSecondsCharged: true,
  JobStopped: true,
  JobCancelled: true,
  JobInterrupted: true,
  JobAttemptFailed: true,
  ProjectCreated: true,
  MediaImported: true,
  MediaTranscribed: true,
  CompositionAdded: true,
  ProjectViewed: true,
  ProjectEdited: true,
  CompositionCreated: true,
  CompositionRangeCut: true,
  CompositionRangeKept: true,
  CompositionClipsInserted: true,
  CompositionClipsRemoved: true,
  CompositionClipsReordered: true,
  CompositionRenamed: true,
  CompositionMarkerAdded: true,
  CompositionReverted: true,
  CompositionRangesCut: true,
  CompositionMarkersAdded: true,
  CompositionAudioSet: true,
  CompositionDeleted: true,
  FolderCreated: true,
  DriveCreated: true,
  DriveUpdated: true,
  TokenCreated: true,
  TokenRevoked: true,
  DeliveryScheduled: true,
  DeliveryClaimed: true,
  DeliveryAttempted: true,
  DeliveryRequested: true,
  ImportLinkIssued: true,
  ImportLinkUsed: true,
  BalanceReserved: true,
  ReservationSettled: true,
  ReservationReleased: true,
  IdempotentResponseRecorded: true,
  ConversationStarted: true,
  AgentTurnRecorded: true,
  PublicationStarted: true,
  PublicationRendered: true,
};
export const EVENT_TYPES = Object.keys(TYPES) as DomainEvent['type'][];
