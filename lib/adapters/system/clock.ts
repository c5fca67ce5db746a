import { randomFillSync, randomUUID } from 'node:crypto';
import { v7 } from 'uuid';
import type { Clock, Ids } from '../../ports/clock';

export const systemClock: Clock = { now: () => new Date() };

/**
 * UUID v7 as the `uuid` package makes them (monotonic: a counter seeded at random each
 * millisecond, as its own `v7()` keeps it), from random bytes drawn 16 at a time out of a 4 KiB
 * pool. The package's own pool is 256 bytes, so it asked the kernel for more every 16 ids: on
 * this VM that was about a microsecond per id, and an accepted import makes four.
 */
const pool = new Uint8Array(4096);
let drawn = pool.length;
const random16 = (): Uint8Array => {
  if (drawn + 16 > pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  return pool.subarray(drawn, (drawn += 16));
};

let msecs = -Infinity;
let seq = 0;
function uuidv7(): string {
  const random = random16();
  const now = Date.now();
  if (now > msecs) {
    msecs = now;
    seq = (random[6] << 23) | (random[7] << 16) | (random[8] << 8) | random[9];
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) msecs += 1;
  }
  return v7({ random, msecs, seq });
}

export const randomIds: Ids = { uuid: () => randomUUID(), uuidv7 };
