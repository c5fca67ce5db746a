import type { ApiAppDeps } from './app';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The guard each API's /v1 requests pass after the token (see `ApiAppDeps.consistency`). */
export function consistencyGuard(consistency: ApiAppDeps['consistency']) {
  if (!consistency) return null;
  const { role, hooks } = consistency;
  return {
    /** Before the route: a read waits for the token's writes, when there are any not yet projected. */
    before: (tokenId: string) => (role === 'read' ? hooks.beforeRead(tokenId) : undefined),
    /** After the route answered: a command's 2xx is noted (a promise: the answer waits for it). */
    after(tokenId: string, method: string, status: number): void | Promise<void> {
      if (role === 'write' && status >= 200 && status < 300 && WRITES.has(method)) return hooks.afterWrite(tokenId);
    },
  };
}
