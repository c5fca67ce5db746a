import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaMessage } from 'kafkajs';
import type { Logger } from 'pino';
import type { DeadLetterStore } from '../../ports/dead-letters';
import type { DeliveryContext, HandlerOutcome, LogHandler } from '../../ports/event-log';
import type { StoredEvent } from '../../ports/event-store';
import type { EventCodec } from './avro-codec';
import type { Lanes, Pending } from './consumer-lanes';
import { eventLetter, putUntilStored, rawLetter, reasonOf, retryDueLetters } from './letters';

/** How the Kafka consumer hands a member's messages to its handler: retries, dead letters, retried letters. */

/** What delivering one member's messages needs; `signal` is aborted once, when the subscription closes. */
export type Member = {
  readonly group: string;
  readonly handler: LogHandler;
  readonly codec: EventCodec;
  readonly deadLetters: DeadLetterStore;
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly maxAttempts: number;
  readonly delayOf: (attempt: number) => number;
  readonly withSlot: <T>(work: () => Promise<T>) => Promise<T>;
  readonly context: DeliveryContext;
  readonly lanes: Lanes;
  readonly offLane: OffLane;
};

export type OffLane = ReturnType<typeof offLane>;

/** At most `n` handler calls at once (the `concurrency` option), whatever the partition. */
export function semaphore(n: number) {
  let free = n;
  const waiting: (() => void)[] = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    while (free === 0) await new Promise<void>((resolve) => waiting.push(resolve));
    free--;
    try {
      return await work();
    } finally {
      free++;
      waiting.shift()?.();
    }
  };
}

/** Keeps retries that run off their lane, so that close waits for the try in progress. */
export function offLane(log: Logger) {
  const detached = new Set<Promise<void>>();
  return {
    track(work: Promise<void>) {
      const guarded = work.catch((err: unknown) => log.error({ err }, 'retry off the lane failed'));
      detached.add(guarded);
      void guarded.finally(() => detached.delete(guarded));
    },
    drained: () => Promise.all([...detached]),
  };
}

const isDeferred = (outcome: HandlerOutcome): outcome is { readonly settled: Promise<void> } =>
  typeof outcome === 'object' && outcome !== null && 'settled' in outcome;

function decode(codec: EventCodec, message: KafkaMessage): StoredEvent {
  if (!message.value) throw new Error(`message at offset ${message.offset} has no value`);
  return codec.decode(message.value);
}

const abandoned = (member: Member, p: Pending) => p.lane.dropped || member.signal.aborted;
const where = (p: Pending) => ({ partition: p.lane.partition, offset: p.message.offset, event_id: p.event?.id, type: p.event?.type });

/**
 * Tries a message from `first` on. Resolves when its lane may go on: the handler returned, it
 * was dead-lettered, or it was abandoned (partition lost, closing: it stays uncommitted). A
 * `settled` that rejects is retried off the lane, so the partition's later messages go on.
 */
export async function deliver(member: Member, p: Pending, first = 1): Promise<void> {
  for (let attempt = first; !abandoned(member, p); attempt++) {
    let failure: unknown;
    try {
      const event = (p.event ??= decode(member.codec, p.message));
      const outcome = await member.withSlot(async () =>
        abandoned(member, p) ? null : { value: await member.handler(event, member.context) },
      );
      if (!outcome) return;
      if (isDeferred(outcome.value)) settleLater(member, p, outcome.value.settled, attempt);
      else member.lanes.settle(p);
      return;
    } catch (err) {
      failure = err;
    }
    if (!(await again(member, p, attempt, failure))) return;
  }
}

function settleLater(member: Member, p: Pending, settled: Promise<void>, attempt: number): void {
  settled.then(
    () => member.lanes.settle(p),
    (err: unknown) =>
      member.offLane.track(again(member, p, attempt, err).then((retry) => (retry ? deliver(member, p, attempt + 1) : undefined))),
  );
}

/** After a failed try: waits the back-off and says whether to try again, or dead-letters the message. */
async function again(member: Member, p: Pending, attempt: number, err: unknown): Promise<boolean> {
  if (abandoned(member, p)) return false;
  if (attempt >= member.maxAttempts) {
    await deadLetter(member, p, err, attempt);
    return false;
  }
  const delay = member.delayOf(attempt);
  member.log.warn(
    { err, ...where(p), attempt, retry_in_ms: delay },
    p.event ? 'handler failed; will retry' : 'message not decodable; will retry',
  );
  await sleep(delay, undefined, { signal: member.signal }).catch(() => undefined);
  return !abandoned(member, p);
}

/** A letter keeps the event, or the raw bytes of a message that could not be decoded; stored, it settles the message. */
async function deadLetter(member: Member, p: Pending, err: unknown, attempts: number): Promise<void> {
  const { group, log, signal, delayOf } = member;
  const reason = reasonOf(err);
  const letter = p.event ? eventLetter(group, p.event, reason, attempts) : rawLetter(group, p.lane.partition, p.message, reason, attempts);
  log.error({ err, ...where(p), attempts }, p.event ? 'event dead-lettered' : 'undecodable message dead-lettered');
  if (await putUntilStored(member.deadLetters, letter, { log, signal, delayOf, gone: () => p.lane.dropped })) member.lanes.settle(p);
}

/** Operator retries of dead letters, one pass at a time: the handler is called again outside any lane. */
export function retryingLetters(member: Member): () => Promise<void> {
  let retrying: Promise<void> | null = null;
  const { deadLetters: store, group: source, codec, log, signal } = member;
  const handle = async (event: StoredEvent) => {
    const outcome = await member.withSlot(() => member.handler(event, member.context));
    if (isDeferred(outcome)) await outcome.settled;
  };
  return () => (retrying ??= retryDueLetters({ store, source, codec, log, signal, handle }).finally(() => (retrying = null)));
}
