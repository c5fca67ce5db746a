/**
 * A host name as it is compared (the outbound guard, allow lists, partner redirect URIs):
 * lower-case, without IPv6 brackets or the trailing dot of a fully qualified name (`localhost.`
 * is `localhost`, and must be refused as it is).
 */
export const normalHost = (host: string): string =>
  host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
