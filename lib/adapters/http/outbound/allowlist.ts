import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { normalHost } from '../../../domain/host-names';

/**
 * The address guard's rules: which hosts and addresses an outbound fetch may reach. Public unicast
 * is allowed; anything that may lead inside the network (loopback, private, link-local, metadata,
 * IPv6 forms that embed an IPv4) only through OUTBOUND_ALLOWLIST.
 */

type Ip = ipaddr.IPv4 | ipaddr.IPv6;

export interface ParsedAllowlist {
  readonly hosts: ReadonlySet<string>;
  /** From `*.example.com` entries, stored as `.example.com`. */
  readonly domainSuffixes: readonly string[];
  readonly ranges: readonly (readonly [Ip, number])[];
  /** Exact IP entries: the only way (besides a host name) to reach a cloud metadata address. */
  readonly exactAddresses: ReadonlySet<string>;
}

const HOST_NAME = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// Listed apart from their ranges so that allow-listing a whole link-local or ULA range does not expose them.
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254']);

/** Parses OUTBOUND_ALLOWLIST entries: host names (`*.` for subdomains), IP addresses or CIDRs. */
export function parseAllowlist(entries: string[]): ParsedAllowlist {
  const hosts = new Set<string>();
  const domainSuffixes: string[] = [];
  const ranges: (readonly [Ip, number])[] = [];
  const exactAddresses = new Set<string>();
  for (const entry of entries.map(normalHost).filter((e) => e !== '')) {
    const ip = parseIp(entry.split('/')[0]);
    if (entry.includes('/')) {
      const [, bits, ...rest] = entry.split('/');
      if (!ip || rest.length > 0 || !/^[0-9]{1,3}$/.test(bits) || Number(bits) > (ip.kind() === 'ipv4' ? 32 : 128)) throw badEntry(entry);
      ranges.push([ip, Number(bits)]);
    } else if (ip) {
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
      exactAddresses.add(unmapped(ip).toString());
    } else if (HOST_NAME.test(entry) && !/^[0-9]+$/.test(entry.split('.').pop() ?? '')) {
      if (entry.startsWith('*.')) domainSuffixes.push(entry.slice(1));
      else hosts.add(entry);
    } else {
      throw badEntry(entry);
    }
  }
  return { hosts, domainSuffixes, ranges, exactAddresses };
}

const badEntry = (entry: string) =>
  new Error(`invalid allowlist entry "${entry}": expected a host name (example.com, *.example.com), an IP address or a CIDR range`);

/**
 * Checks a drive's host allow list (`admin drive update --host-allow-list`): each entry a host
 * name or an IP address, as partner URIs are matched by exact host (services/command-api/partner.ts),
 * so neither `*.` nor a CIDR range could ever match. Returns the entries as they are compared,
 * blank ones left out; throws naming the first bad one.
 */
export function parseHostAllowList(entries: readonly string[]): string[] {
  return entries
    .map(normalHost)
    .filter((entry) => entry !== '')
    .map((entry) => {
      if (parseIp(entry) || isHostName(entry)) return entry;
      const hint = entry.includes('/') || entry.startsWith('*') ? ' (partner URIs are matched by exact host: list each host)' : '';
      throw new Error(`invalid host allow list entry "${entry}": expected a host name or an IP address${hint}`);
    });
}

/** A DNS host name whose last label is not all digits (`1.2.3` is a malformed address, not a name). */
const isHostName = (entry: string) => HOST_NAME.test(entry) && !entry.startsWith('*.') && !/^[0-9]+$/.test(entry.split('.').pop() ?? '');

/**
 * IPv6 ranges that carry an IPv4 address: IPv4-compatible, SIIT, NAT64 (well-known and local),
 * Teredo, 6to4. Where a packet to one of them lands depends on a translator, a relay or the host's
 * own tunnels, not on the address, so neither the IPv6 nor the embedded IPv4 can be judged: they
 * are refused unless an IPv6 entry of the allowlist covers them. IPv4-mapped addresses
 * (::ffff:0:0/96) are not among them: a socket connects to exactly their IPv4, so they are judged as it.
 */
const EMBEDS_IPV4 = ['::/96', '::ffff:0:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '2001::/32', '2002::/16'].map((cidr) =>
  ipaddr.IPv6.parseCIDR(cidr),
);

/**
 * Parses an address as Node writes and connects to it. ipaddr.js alone reads `::1.2.3.4`
 * (IPv4-compatible) as `::ffff:1.2.3.4` (IPv4-mapped), so IPv6 first goes through the WHATWG URL
 * serializer, which writes hex only; zone ids (`%eth0`) are not addresses a URL can name.
 */
function parseIp(text: string): Ip | null {
  const family = isIP(text);
  if (family === 4) return ipaddr.IPv4.parse(text);
  if (family !== 6) return null;
  try {
    return ipaddr.IPv6.parse(new URL(`http://[${text}]/`).hostname.slice(1, -1));
  } catch {
    return null;
  }
}

const unmapped = (ip: Ip): Ip => (ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress() ? ip.toIPv4Address() : ip);

/** True when `address` is public unicast, or allow-listed. IPv4-mapped IPv6 is judged as its IPv4. */
export function isAddressAllowed(address: string, allowlist: ParsedAllowlist): boolean {
  const ip = parseIp(address);
  if (!ip) return false;
  const judged = unmapped(ip);
  const canonical = judged.toString();
  if (METADATA_ADDRESSES.has(canonical)) return allowlist.exactAddresses.has(canonical);
  const listed = [ip, judged].some((x) => allowlist.ranges.some(([net, bits]) => x.kind() === net.kind() && x.match(net, bits)));
  if (listed) return true;
  if (judged instanceof ipaddr.IPv6 && EMBEDS_IPV4.some(([net, bits]) => judged.match(net, bits))) return false;
  // Anything but plain unicast (private, reserved, multicast, ...) may lead inside the network.
  return judged.range() === 'unicast';
}

/** True when the host name itself is allow-listed. `host` comes from a WHATWG URL, so it is already lower-case and punycoded. */
export function isHostAllowed(host: string, allowlist: ParsedAllowlist): boolean {
  const name = normalHost(host);
  return allowlist.hosts.has(name) || allowlist.domainSuffixes.some((suffix) => name.endsWith(suffix));
}

/** `localhost` and its subdomains always name loopback (RFC 6761), whatever a resolver answers for them. */
export const isLoopbackName = (host: string): boolean => {
  const name = normalHost(host);
  return name === 'localhost' || name.endsWith('.localhost');
};

/**
 * What can be refused from a URL alone, before any DNS look-up: a host that is a literal
 * internal address, or localhost. The API answers these with 400 at once; names that resolve
 * inward are refused when fetched.
 */
export function literalRefusal(rawUrl: string, allowlist: ParsedAllowlist): string | null {
  let host: string;
  try {
    host = normalHost(new URL(rawUrl).hostname);
  } catch {
    return 'is not a URL';
  }
  if (isHostAllowed(host, allowlist)) return null;
  if (isLoopbackName(host)) {
    if (host === 'localhost' && loopbackListed(allowlist)) return null;
    return `${host} is a loopback host; only public addresses can be fetched ${UNLESS_LISTED}`;
  }
  if (isIP(host) !== 0 && !isAddressAllowed(host, allowlist)) {
    return `${host} is an internal (loopback, private or link-local) address; only public addresses can be fetched ${UNLESS_LISTED}`;
  }
  return null;
}

/** Said with every refusal of an internal address: the one setting that changes it, for whoever runs the service. */
export const UNLESS_LISTED = 'unless the service is started with OUTBOUND_ALLOWLIST listing it (e.g. OUTBOUND_ALLOWLIST=127.0.0.1)';

/**
 * `localhost` names the loopback address (RFC 6761 §6.3), so allowing 127.0.0.1 or ::1 allows
 * it too; at fetch time its resolved addresses are still checked as any other host's.
 */
export const loopbackListed = (allowlist: ParsedAllowlist): boolean =>
  isAddressAllowed('127.0.0.1', allowlist) || isAddressAllowed('::1', allowlist);
