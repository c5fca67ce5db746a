/** Already in its normal form: lower-case labels of letters, digits and dashes, no brackets, no trailing dot. */
const NORMAL = /^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/;

/**
 * A host name as it is compared (the outbound guard, allow lists, partner redirect URIs):
 * lower-case, without IPv6 brackets or the trailing dot of a fully qualified name (`localhost.`
 * is `localhost`, and must be refused as it is). A host that is normal already, as a WHATWG
 * URL's mostly is, comes back as it is without the four string passes (the accept path asks for
 * two or three per request).
 */
export const normalHost = (host: string): string =>
  NORMAL.test(host)
    ? host
    : host
        .trim()
        .toLowerCase()
        .replace(/^\[(.*)\]$/, '$1')
        .replace(/\.$/, '');
