// Who a request comes from: `request.ip` counts only when it is an IP address (else the peer's),
// and "one client" for the wrong-key limit is an IPv4 address or an IPv6 /64.
// @see docs/security.md "Limits"
import ipaddr from 'ipaddr.js';

/** Node's own IPv4 text, kept without parsing (hot path). */
const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const IPV4_WITH_PORT = /^(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}):\d{1,5}$/;
const BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/;

/** The canonical IP address (IPv4-mapped → IPv4; `127.1`, `0x7f.0.0.1` refused), or null. */
export function canonicalAddress(text: string): string | null {
  let candidate = text.trim();
  if (IPV4.test(candidate)) return ipaddr.IPv4.isValidFourPartDecimal(candidate) ? candidate : null;
  candidate = IPV4_WITH_PORT.exec(candidate)?.[1] ?? BRACKETED.exec(candidate)?.[1] ?? candidate;
  if (ipaddr.IPv4.isValidFourPartDecimal(candidate)) return ipaddr.IPv4.parse(candidate).toString();
  if (!ipaddr.IPv6.isValid(candidate)) return null;
  const v6 = ipaddr.IPv6.parse(candidate);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toString();
}

export interface AddressedRequest {
  ip: string;
  socket: { remoteAddress?: string | undefined };
}

export function clientAddress(request: AddressedRequest): string {
  const { ip } = request;
  const peer = request.socket.remoteAddress ?? '';
  if (ip === peer && IPV4.test(ip)) return ip; // Node's own text: already canonical
  return canonicalAddress(ip) ?? canonicalAddress(peer) ?? peer;
}

/** The wrong-key limit's key: the IPv4 address, or the IPv6 /64. */
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
