import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook must never reach unless private targets are allowed: loopback, private,
 * carrier-grade NAT, link-local (incl. cloud metadata 169.254.169.254), unique-local,
 * multicast, reserved and unspecified, for IPv4 and IPv6. IPv4-mapped IPv6 (::ffff:a.b.c.d)
 * and NAT64/6to4 forms are unwrapped to the IPv4 address they carry.
 */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16],
  ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
  ['2001:db8::', 32], ['100::', 64], ['fd00:ec2::', 32],
  // Local-use NAT64 (RFC 8215) and Teredo (its IPv4 is obfuscated, so the whole prefix).
  ['64:ff9b:1::', 48], ['2001::', 32],
] as const) blocked.addSubnet(net, prefix, 'ipv6');

/**
 * The eight 16-bit groups of an IPv6 literal (zone id dropped), or null. Any spelling is
 * accepted (`::`, leading zeros, upper case, a dotted IPv4 tail), so the checks below don't
 * depend on how the address happens to be written.
 */
function ipv6Groups(ip: string): number[] | null {
  const [addr] = ip.split('%');
  let text = addr!.toLowerCase();
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    if (isIP(dotted[2]!) !== 4) return null;
    const [a, b, c, d] = dotted[2]!.split('.').map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return groups.some(Number.isNaN) ? null : groups;
}

const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address carries and would reach: IPv4-mapped (::ffff:0:0/96),
 * IPv4-compatible (::/96), IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16). Null for a plain IPv6 address.
 */
function embeddedIpv4(g: number[]): string | null {
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && (g[5] === 0xffff || g[5] === 0)) return v4(g[6]!, g[7]!);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!);
  return null;
}

/** True when `ip` (a literal address) is in a range webhooks must not reach. */
export function isForbiddenAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) {
    const groups = ipv6Groups(ip);
    if (!groups) return true;
    const carried = embeddedIpv4(groups);
    if (carried !== null) return blocked.check(carried, 'ipv4');
    return blocked.check(groups.map((x) => x.toString(16)).join(':'), 'ipv6');
  }
  return true; // not an address at all: refuse rather than guess
}
