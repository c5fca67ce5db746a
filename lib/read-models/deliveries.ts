import type { ReadModel } from '../app/read-models';
import type { DeliveryEvent } from '../domain/delivery';
import { streamCategory } from '../domain/ids';
import type { StoredEvent } from '../ports/event-store';
import type { Doc } from '../ports/read-store';

/**
 * The `deliveries` read model: each job's webhook delivery, its state and attempts. The
 * dispatcher finds due deliveries here (`state: pending`, `due_at` passed), so retries never ride
 * on the log's redelivery; `GET /jobs/{id}/deliveries` lists the attempts.
 */

export const DELIVERIES = 'deliveries';

export type DeliveryAttemptView = {
  readonly attempt: number;
  readonly at: string;
  readonly status: number | null;
  readonly error: string | null;
  readonly duration_ms: number;
  readonly outcome: string;
  readonly next_attempt_at: string | null;
};

/**
 * The host name a delivery goes to, the dispatcher's unit of fairness within a drive (issue 19):
 * without the port (four ports of one host are one host), brackets or a trailing dot.
 */
export function receivingHost(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  } catch {
    return url;
  }
}

export function evolveDeliveryDoc(doc: Doc | null, stored: StoredEvent): Doc | null {
  const event = { type: stored.type, data: stored.data } as DeliveryEvent;
  if (event.type === 'DeliveryScheduled') {
    const d = event.data;
    return {
      _id: d.job_id,
      _rev: stored.revision,
      ...d,
      host: receivingHost(d.url),
      state: 'pending',
      attempts: [],
      requested_at: null,
      claimed_until: null,
    };
  }
  if (!doc) return null;
  switch (event.type) {
    case 'DeliveryClaimed':
      // Dispatchers skip a delivery another one holds until its lease ends.
      return { ...doc, claimed_until: event.data.lease_until };
    case 'DeliveryAttempted': {
      const a = event.data;
      const attempts = [...(doc.attempts as DeliveryAttemptView[]), a];
      return { ...doc, attempts, state: a.outcome === 'retry' ? 'pending' : a.outcome, due_at: a.next_attempt_at, claimed_until: null };
    }
    case 'DeliveryRequested':
      return { ...doc, state: 'pending', due_at: event.data.at, requested_at: event.data.at, claimed_until: null };
    default:
      return doc;
  }
}

export const deliveriesModel: ReadModel = {
  name: DELIVERIES,
  // 2: `host`, and the index the dispatcher walks drive by drive, host by host.
  version: 2,
  handles: new Set(['DeliveryScheduled', 'DeliveryClaimed', 'DeliveryAttempted', 'DeliveryRequested'] satisfies DeliveryEvent['type'][]),
  docId: (e) => (streamCategory(e.streamId) === 'delivery' ? e.streamId.slice('delivery-'.length) : null),
  evolve: evolveDeliveryDoc,
  indexes: [['drive_id'], ['state', 'drive_id', 'host', 'due_at']],
};
