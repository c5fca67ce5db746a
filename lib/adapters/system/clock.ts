import { randomUUID } from 'node:crypto';
import { v7 } from 'uuid';
import type { Clock, Ids } from '../../ports/clock';

export const systemClock: Clock = { now: () => new Date() };
export const randomIds: Ids = { uuid: () => randomUUID(), uuidv7: () => v7() };
