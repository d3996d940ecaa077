// Who "one client" is for the wrong-key limit: an IPv4 address, or an IPv6 /64. A /64 is what one
// subscriber, host or VM is normally given, so counting each of its 2^64 addresses apart would give
// one attacker unlimited guesses. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) count as the IPv4.
import ipaddr from 'ipaddr.js';

/** Dotted-quad IPv4, as Node reports it: the common case, kept without parsing (a request's hot path). */
const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

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
