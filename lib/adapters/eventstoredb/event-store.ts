import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  excludeSystemEvents,
  FORWARDS,
  jsonEvent,
  NO_STREAM,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import type {
  AllStreamSubscription,
  AppendExpectedRevision,
  CurrentRevision,
  Position as EsdbPosition,
  ReadPosition,
  RecordedEvent,
} from '@eventstore/db-client';
import type {
  AppendResult,
  EventMetadata,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  StoredEvent,
  Subscription,
} from '../../ports/event-store';

/**
 * The distributed EventStore on EventStoreDB. Positions are "commit/prepare" in decimal.
 * Reading `$all` from a position is inclusive on the server, so the event at `after` is skipped
 * here; system events (`$`-prefixed types or streams) are never returned.
 */

const RESUBSCRIBE_MIN_MS = 100;
const RESUBSCRIBE_MAX_MS = 5000;

const formatPosition = (p: EsdbPosition): Position => `${p.commit}/${p.prepare}`;

function parsePosition(p: Position | null): ReadPosition {
  if (p === null) return START;
  const [commit, prepare] = p.split('/');
  if (commit === undefined || prepare === undefined) throw new Error(`not an EventStoreDB position: ${p}`);
  return { commit: BigInt(commit), prepare: BigInt(prepare) };
}

const isSystem = (e: RecordedEvent): boolean => e.type.startsWith('$') || e.streamId.startsWith('$');

function toExpected(expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === 'no_stream') return NO_STREAM;
  if (expected === 'any') return ANY;
  return BigInt(expected);
}

const toActual = (current: CurrentRevision): number | 'no_stream' => (current === NO_STREAM ? 'no_stream' : Number(current));

/**
 * Only JSON events are ours; `position` is absent on servers before 22.6, where the commit
 * position alone is the best we have.
 */
function toStored(e: RecordedEvent | undefined, commitPosition?: bigint): StoredEvent | null {
  if (!e || !e.isJson || isSystem(e)) return null;
  const position = e.position ?? (commitPosition === undefined ? undefined : { commit: commitPosition, prepare: commitPosition });
  return {
    id: e.id,
    type: e.type,
    data: e.data as Record<string, unknown>,
    metadata: (e.metadata ?? {}) as EventMetadata,
    streamId: e.streamId,
    revision: Number(e.revision),
    position: position ? formatPosition(position) : '',
    createdAt: e.created.toISOString(),
  };
}

export function createEsdbEventStore(client: EventStoreDBClient): EventStore {
  async function append(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const data = events.map((e) => jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: e.metadata }));
    try {
      const result = await client.appendToStream(streamId, data, { expectedRevision: toExpected(expected) });
      // With `throwOnAppendFailure=false` in the connection string a conflict is a result, and
      // nextExpectedRevision is the current revision (-1: no stream).
      if (!result.success) {
        const actual = result.nextExpectedRevision < 0n ? 'no_stream' : Number(result.nextExpectedRevision);
        return { ok: false, conflict: { expected, actual } };
      }
      const position = result.position ? formatPosition(result.position) : await headPosition();
      return { ok: true, nextRevision: Number(result.nextExpectedRevision), position };
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        return { ok: false, conflict: { expected, actual: toActual(err.actualVersion) } };
      }
      throw err;
    }
  }

  /** Fallback for servers that do not report the append's position. */
  async function headPosition(): Promise<Position> {
    for await (const resolved of client.readAll({ fromPosition: END, direction: BACKWARDS, maxCount: 1 })) {
      if (resolved.event) return formatPosition(resolved.event.position);
    }
    return '';
  }

  async function readStream(streamId: string, options?: { readonly fromRevision?: number }): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    const from = options?.fromRevision ? BigInt(options.fromRevision) : START;
    try {
      for await (const resolved of client.readStream(streamId, { fromRevision: from, direction: FORWARDS })) {
        const event = toStored(resolved.event, resolved.commitPosition);
        if (event) out.push(event);
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError) return [];
      throw err;
    }
    return out;
  }

  /** Pages through `$all` until `limit` non-system events are found or the end is reached. */
  async function readAll(after: Position | null, limit: number): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    let from = after;
    while (out.length < limit) {
      // One more than needed, because the read includes the event at `from` itself.
      const pageSize = limit - out.length + 1;
      let seen = 0;
      let last: Position | null = null;
      for await (const resolved of client.readAll({ fromPosition: parsePosition(from), direction: FORWARDS, maxCount: pageSize })) {
        seen += 1;
        if (!resolved.event) continue;
        last = formatPosition(resolved.event.position);
        const event = toStored(resolved.event);
        if (event && event.position !== from && out.length < limit) out.push(event);
      }
      if (seen < pageSize || last === null || last === from) break;
      from = last;
    }
    return out;
  }

  return {
    append,
    readStream,
    readAll,
    subscribeAll: (after, handler) => followAll(client, after, handler),
    close: () => client.dispose(),
  };
}

/**
 * A catch-up subscription that survives dropped connections: it resubscribes from the last
 * delivered position with back-off. Only a throwing handler ends it (see the port).
 */
function followAll(client: EventStoreDBClient, after: Position | null, handler: (event: StoredEvent) => Promise<void>): Subscription {
  let closed = false;
  let cursor = after;
  let current: AllStreamSubscription | null = null;
  let wake: (() => void) | null = null;

  async function follow(sub: AllStreamSubscription): Promise<'dropped' | 'ended'> {
    for await (const resolved of sub) {
      if (closed) return 'ended';
      const event = toStored(resolved.event);
      // The server may start at `after` inclusively; the port promises strictly after.
      if (!event || event.position === cursor) continue;
      try {
        await handler(event);
      } catch {
        return 'ended';
      }
      cursor = event.position;
    }
    return 'dropped';
  }

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => (clearTimeout(timer), resolve());
    });

  const loop = (async () => {
    let delay = RESUBSCRIBE_MIN_MS;
    while (!closed) {
      const sub = client.subscribeToAll({ fromPosition: parsePosition(cursor), filter: excludeSystemEvents() });
      current = sub;
      const before = cursor;
      const outcome = await follow(sub).catch(() => 'dropped' as const);
      await sub.unsubscribe().catch(() => undefined);
      if (outcome === 'ended' || closed) break;
      delay = cursor !== before ? RESUBSCRIBE_MIN_MS : Math.min(delay * 2, RESUBSCRIBE_MAX_MS);
      await pause(delay);
    }
  })();

  return {
    async close() {
      closed = true;
      wake?.();
      await current?.unsubscribe().catch(() => undefined);
      await loop;
    },
  };
}
