import { createRelay } from './relay';
import type { Relay, RelayDeps } from './relay';

/**
 * The relay service: one instance per deployment (two would publish every event twice, which
 * consumers tolerate but should not have to). `main.ts` wires the deps from the environment.
 */

export type { Relay, RelayDeps, RelayStatus } from './relay';

/** Starts relaying from the saved checkpoint; resolves once following `$all`. */
export async function start(deps: RelayDeps): Promise<Pick<Relay, 'stop' | 'status'>> {
  const relay = createRelay(deps);
  await relay.start();
  return { stop: () => relay.stop(), status: () => relay.status() };
}
