// Who a request comes from, as an IP address, and who "one client" is for the wrong-key limit.
//
// The address: Fastify's `request.ip` is the X-Forwarded-For entry TRUST_PROXY selects, which is
// text the client may have written. It counts only when it is an IP address (a port and brackets
// stripped, IPv4-mapped IPv6 read as the IPv4); anything else is treated as coming from the peer
// that sent it (the proxy itself), so that no string gets a budget of its own.
//
// One client: an IPv4 address, or an IPv6 /64. A /64 is what one subscriber, host or VM is
// normally given, so counting each of its 2^64 addresses apart would give one attacker unlimited
// guesses.
import ipaddr from 'ipaddr.js';

/** Dotted-quad IPv4, as Node reports it: the common case, kept without parsing (a request's hot path). */
const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
/** `a.b.c.d:port`. */
const IPV4_WITH_PORT = /^(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}):\d{1,5}$/;
/** `[v6]` or `[v6]:port`. */
const BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/;

/**
 * The IP address an address text names, in one canonical form (IPv4 dotted quad, IPv6 as RFC 5952
 * writes it, an IPv4-mapped IPv6 as its IPv4), or null when it is not one. Only the four-part
 * decimal IPv4 form counts (`127.1` and `0x7f.0.0.1` do not).
 */
export function canonicalAddress(text: string): string | null {
  let candidate = text.trim();
  if (IPV4.test(candidate)) return ipaddr.IPv4.isValidFourPartDecimal(candidate) ? candidate : null;
  candidate = IPV4_WITH_PORT.exec(candidate)?.[1] ?? BRACKETED.exec(candidate)?.[1] ?? candidate;
  if (ipaddr.IPv4.isValidFourPartDecimal(candidate)) return ipaddr.IPv4.parse(candidate).toString();
  if (!ipaddr.IPv6.isValid(candidate)) return null;
  const v6 = ipaddr.IPv6.parse(candidate);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toString();
}

/** What a request says of where it comes from: its selected address, and the socket's peer. */
export interface AddressedRequest {
  ip: string;
  socket: { remoteAddress?: string | undefined };
}

/**
 * The client's address: `request.ip` when it is an IP address, else the peer's (a proxy that
 * forwarded something else); the peer's text as it is when even that is none (a Unix socket).
 */
export function clientAddress(request: AddressedRequest): string {
  const { ip } = request;
  const peer = request.socket.remoteAddress ?? '';
  if (ip === peer && IPV4.test(ip)) return ip; // Node's own text: already canonical
  return canonicalAddress(ip) ?? canonicalAddress(peer) ?? peer;
}

/** The wrong-key limit's key for a client address (clientAddress): the IPv4 address, or the IPv6 /64. */
export function clientLimitKey(address: string): string {
  if (IPV4.test(address)) return address;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return address; // not an IP address (a Unix socket): counted as it is
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const prefix = v6.parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':');
  return `${prefix}::/64`;
}
