import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { OutboundError } from '../../../domain/errors';
import { normalHost } from '../../../domain/host-names';
import { isAddressAllowed, isHostAllowed, isLoopbackName, loopbackListed, UNLESS_LISTED, type ParsedAllowlist } from './allowlist';
import { abortReason, type Action } from './errors';

/**
 * The address guard at fetch time: every address a host resolves to is checked, and the
 * connection may then go only to those addresses (no DNS rebinding window).
 */

/**
 * Resolves every address of the host and refuses the hop if any of them is internal; a localhost
 * name (also `localhost.`, with the trailing dot of a fully qualified name) before any look-up.
 * The look-up uses the name as given: without its dot a single label may take a search domain. The look-up
 * has a deadline of its own (`timeoutMs`) besides the caller's signal: getaddrinfo can hang.
 */
export async function checkedAddresses(
  host: string,
  guard: { readonly allowlist: ParsedAllowlist; readonly timeoutMs: number },
  action: Action,
  signal?: AbortSignal,
): Promise<LookupAddress[]> {
  const { allowlist } = guard;
  const allowed = isHostAllowed(host, allowlist);
  const localhost = normalHost(host) === 'localhost' && loopbackListed(allowlist);
  if (!allowed && !localhost && isLoopbackName(host)) {
    throw new OutboundError('blocked_address', `refused to ${action} ${host}: it is a loopback host, ${UNLESS_LISTED}`);
  }
  const family = isIP(host);
  const resolved = family !== 0 ? [{ address: host, family }] : await resolveAll(host, guard.timeoutMs, signal);
  // localhost mostly resolves to both 127.0.0.1 and ::1: with one of them listed, only the listed
  // ones are connected to, rather than the host refused for the other.
  const listed = localhost ? resolved.filter((a) => isAddressAllowed(a.address, allowlist)) : [];
  const addresses = listed.length > 0 ? listed : resolved;
  const internal = allowed ? undefined : addresses.find((a) => !isAddressAllowed(a.address, allowlist));
  if (internal) {
    throw new OutboundError(
      'blocked_address',
      `refused to ${action} ${host}: it resolves to an internal (private or loopback) address, ${internal.address}, ${UNLESS_LISTED}`,
    );
  }
  return addresses;
}

async function resolveAll(host: string, timeoutMs: number, signal?: AbortSignal): Promise<LookupAddress[]> {
  let addresses: LookupAddress[] = [];
  try {
    addresses = await within(lookup(host, { all: true, verbatim: true }), timeoutMs, `resolving ${host} timed out`, signal);
  } catch (err) {
    if (signal?.aborted || err instanceof OutboundError) throw err;
  }
  if (addresses.length === 0) throw new OutboundError('network', `could not resolve host ${host}`);
  return addresses;
}

/** getaddrinfo cannot be cancelled; this stops waiting for it at the deadline or on abort. */
function within<T>(promise: Promise<T>, ms: number, timeoutMessage: string, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new OutboundError('timeout', timeoutMessage)), ms);
    const onAbort = () => reject(abortReason(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    promise.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
  });
}

/**
 * A lookup that only ever answers with the addresses already checked, so a DNS answer that
 * changes between the check and the connect (rebinding) is never used. All of them are offered
 * so Node's happy-eyeballs can still fall back from IPv6 to IPv4.
 */
export function pinnedLookup(pinned: LookupAddress[]): LookupFunction {
  return (_host, opts, callback) => {
    const family = opts.family === 4 || opts.family === 6 ? opts.family : undefined;
    const usable = family ? pinned.filter((a) => a.family === family) : pinned;
    if (usable.length === 0) callback(Object.assign(new Error('no checked address of the wanted family'), { code: 'ENOTFOUND' }), '');
    else if (opts.all) callback(null, usable);
    else callback(null, usable[0].address, usable[0].family);
  };
}
