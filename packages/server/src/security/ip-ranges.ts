import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Cidr<T> = [T, number];
const v4 = (cidr: string): Cidr<ipaddr.IPv4> => ipaddr.IPv4.parseCIDR(cidr);
const v6 = (cidr: string): Cidr<ipaddr.IPv6> => ipaddr.IPv6.parseCIDR(cidr);

/**
 * Addresses a webhook must never reach unless private targets are allowed: loopback, private,
 * carrier-grade NAT, link-local (incl. cloud metadata 169.254.169.254), unique-local,
 * multicast, reserved and unspecified, for IPv4 and IPv6.
 */
const BLOCKED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
];
const BLOCKED_V6 = [
  '::/128',
  '::1/128',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
  '2001:db8::/32',
  '100::/64',
  'fd00:ec2::/32',
  // Local-use NAT64 (RFC 8215) and Teredo (its IPv4 is obfuscated, so the whole prefix).
  '64:ff9b:1::/48',
  '2001::/32',
];
/**
 * IPv6 prefixes whose last 32 bits are an IPv4 address the packet really goes to:
 * IPv4-mapped, IPv4-compatible, IPv4-translated (SIIT) and NAT64's well-known prefix. Such an
 * address is judged by the IPv4 address it carries, so `::ffff:127.0.0.1` is loopback.
 */
const CARRY_V4_IN_LOW_BITS = ['::ffff:0:0/96', '::/96', '::ffff:0:0:0/96', '64:ff9b::/96'];
/** 6to4 carries its IPv4 address in bits 16..47. */
const SIX_TO_FOUR = '2002::/16';

/** The lists above, parsed on first use (a typo in one fails the first check, and its tests). */
let ranges: { v4: Cidr<ipaddr.IPv4>[]; v6: Cidr<ipaddr.IPv6>[]; carryLow: Cidr<ipaddr.IPv6>[]; sixToFour: Cidr<ipaddr.IPv6> } | undefined;
function parsedRanges() {
  ranges ??= { v4: BLOCKED_V4.map(v4), v6: BLOCKED_V6.map(v6), carryLow: CARRY_V4_IN_LOW_BITS.map(v6), sixToFour: v6(SIX_TO_FOUR) };
  return ranges;
}

function ipv4Of(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);
}

/** The IPv4 address an IPv6 address carries and would reach, or null for a plain IPv6 address. */
export function embeddedIpv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  const g = addr.parts;
  const { carryLow, sixToFour } = parsedRanges();
  if (carryLow.some((cidr) => addr.match(cidr))) return ipv4Of(g[6]!, g[7]!);
  if (addr.match(sixToFour)) return ipv4Of(g[1]!, g[2]!);
  return null;
}

const blockedV4 = (addr: ipaddr.IPv4) => parsedRanges().v4.some((cidr) => addr.match(cidr));

/**
 * True when `ip` (a literal address, as the resolver or the URL gives it) is in a range webhooks
 * must not reach. Parsing is ipaddr.js's: any IPv6 spelling (`::`, leading zeros, upper case, a
 * dotted IPv4 tail, a zone id) means the same address. Anything it can't parse is refused: a
 * string we can't read is never assumed public.
 */
export function isForbiddenAddress(ip: string): boolean {
  // Node's check first: it accepts only dotted-quad IPv4, where ipaddr.js would also read
  // classful and hex forms (`127.1`, `0x7f000001`) that no resolver returns.
  if (isIP(ip) === 4) return blockedV4(ipaddr.IPv4.parse(ip));
  let addr: ipaddr.IPv6;
  try {
    addr = ipaddr.IPv6.parse(ip);
  } catch {
    return true; // not an address we can read (e.g. a zone id ipaddr.js refuses): fail closed
  }
  const carried = embeddedIpv4(addr);
  if (carried) return blockedV4(carried);
  return parsedRanges().v6.some((cidr) => addr.match(cidr));
}
