import type { Logger } from 'pino';
import { eventLetter, putUntilStored, reasonOf } from '../../app/dead-letters';
import type { DeadLetter, DeadLetterStore } from '../../ports/dead-letters';
import type { DeliveryContext, LogHandler } from '../../ports/event-log';
import type { StoredEvent } from '../../ports/event-store';

/** How the embedded log hands one group's events to its handler: retries, dead letters, retried letters. */

/** What delivering one group's events needs; `closing` is aborted once, when the subscription closes. */
export type Group = {
  readonly name: string;
  readonly handler: LogHandler;
  readonly log: Logger;
  readonly deadLetters: DeadLetterStore;
  readonly closing: AbortSignal;
  readonly maxAttempts: number;
  readonly delayOf: (attempt: number) => number;
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const NO_HEARTBEAT: DeliveryContext = { heartbeat: async () => undefined };

/**
 * Tries the event until it settles or is dead-lettered. The lane waits only for the handler's
 * own call; a `settled` promise is awaited off the lane. Resolves false if the subscription
 * closed first (the event then stays uncommitted).
 */
export async function deliver(group: Group, event: StoredEvent, onTaken: () => void): Promise<boolean> {
  let taken = false;
  const take = () => {
    if (taken) return;
    taken = true;
    onTaken();
  };
  for (let attempt = 1; !group.closing.aborted; attempt++) {
    try {
      const outcome = await group.handler(event, NO_HEARTBEAT);
      take();
      if (outcome?.settled) await outcome.settled;
      return true;
    } catch (err) {
      if (group.closing.aborted) return false;
      if (attempt >= group.maxAttempts) {
        await giveUp(group, event, err, attempt);
        take();
        return !group.closing.aborted;
      }
      group.log.warn(
        { err, event_id: event.id, type: event.type, attempt, retry_in_ms: group.delayOf(attempt) },
        'handler failed; will retry',
      );
      await sleep(group.delayOf(attempt));
    }
  }
  return false;
}

/** A poison event goes to the dead-letter store and counts as settled, so it never stops the group. */
async function giveUp(group: Group, event: StoredEvent, err: unknown, attempts: number): Promise<void> {
  const { log } = group;
  log.error({ err, event_id: event.id, type: event.type, stream: event.streamId, attempts }, 'event dead-lettered');
  await putUntilStored(group.deadLetters, eventLetter(group.name, event, reasonOf(err), attempts), {
    log,
    signal: group.closing,
    delayOf: group.delayOf,
  });
}

/** Letters an operator marked for retry are handled again here, outside the checkpoint. */
export function retryingLetters(group: Group, pollMs: number) {
  let retrying = false;
  const retryDue = async () => {
    if (retrying || group.closing.aborted) return;
    retrying = true;
    try {
      for (const letter of await group.deadLetters.dueRetries(group.name, 10)) {
        if (group.closing.aborted) return;
        await retryLetter(group, letter);
      }
    } catch (err) {
      group.log.warn({ err }, 'could not read dead letters');
    } finally {
      retrying = false;
    }
  };
  const timer = setInterval(() => void retryDue(), pollMs);
  return { stop: () => clearInterval(timer) };
}

/** Removed once handled; a letter that fails again stays, marked dead with the new reason. */
async function retryLetter(group: Group, letter: DeadLetter): Promise<void> {
  try {
    const event = JSON.parse(letter.payload) as StoredEvent;
    const outcome = await group.handler(event, NO_HEARTBEAT);
    if (outcome?.settled) await outcome.settled;
    await group.deadLetters.remove(letter.id);
    group.log.info({ letter: letter.id, event_id: letter.event_id }, 'dead letter retried successfully');
  } catch (err) {
    await group.deadLetters.markDead(letter.id, reasonOf(err));
    group.log.error({ err, letter: letter.id }, 'dead letter failed again');
  }
}
