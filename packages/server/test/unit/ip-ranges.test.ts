import { describe, expect, it } from 'vitest';
import ipaddr from 'ipaddr.js';
import { embeddedIpv4, isForbiddenAddress } from '../../src/security/ip-ranges.ts';

/** SSRF guard: which literal addresses a webhook may never reach (docs/architecture.md). */
describe('isForbiddenAddress', () => {
  it.each([
    ['127.0.0.1', 'IPv4 loopback'],
    ['127.255.255.254', 'IPv4 loopback, end of range'],
    ['10.0.0.1', 'private 10/8'],
    ['10.255.255.255', 'private 10/8, end'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12, end'],
    ['192.168.1.1', 'private 192.168/16'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT, end'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['::1', 'IPv6 loopback'],
    ['0:0:0:0:0:0:0:1', 'IPv6 loopback, long form'],
    ['::', 'IPv6 unspecified'],
    ['fc00::1', 'unique-local fc00::/7'],
    ['fd12:3456:789a::1', 'unique-local fd00::/8'],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique-local, end'],
    ['fe80::1', 'link-local fe80::/10'],
    ['febf:ffff::1', 'link-local, end'],
    ['FE80::1', 'link-local, upper case'],
    ['fe80::1%eth0', 'link-local with a zone id'],
    ['ff02::1', 'IPv6 multicast'],
    ['fd00:ec2::254', 'AWS IPv6 metadata'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback, dotted'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::FFFF:7F00:1', 'IPv4-mapped loopback, hex upper case'],
    ['0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped loopback, long form'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata, hex'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible loopback, dotted'],
    ['::7f00:1', 'IPv4-compatible loopback, hex'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated loopback'],
    ['64:ff9b::169.254.169.254', 'NAT64 metadata, dotted'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 metadata, hex'],
    ['64:ff9b::7f00:1', 'NAT64 loopback'],
    ['2002:7f00:1::1', '6to4 of loopback'],
    ['2002:a9fe:a9fe::1', '6to4 of metadata'],
    ['64:ff9b:1::a9fe:a9fe', 'local-use NAT64'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo (hides its IPv4)'],
    ['2001:db8::1', 'IPv6 documentation'],
    ['0000:0000:0000:0000:0000:0000:0000:0001', 'IPv6 loopback with leading zeros'],
  ])('refuses %s (%s)', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    ['8.8.8.8', 'public IPv4'],
    ['1.1.1.1', 'public IPv4'],
    ['93.184.216.34', 'public IPv4'],
    ['172.15.255.255', 'just below 172.16/12'],
    ['172.32.0.0', 'just above 172.16/12'],
    ['100.63.255.255', 'just below CGNAT'],
    ['100.128.0.0', 'just above CGNAT'],
    ['169.253.255.255', 'just below link-local'],
    ['11.0.0.1', 'just above 10/8'],
    ['192.169.0.1', 'just above 192.168/16'],
    ['2606:4700:4700::1111', 'public IPv6'],
    ['2a00:1450:4001:81c::200e', 'public IPv6'],
    ['::ffff:8.8.8.8', 'IPv4-mapped public'],
    ['::ffff:808:808', 'IPv4-mapped public, hex'],
    ['64:ff9b::808:808', 'NAT64 of a public address'],
    ['2002:808:808::1', '6to4 of a public address'],
    ['fbff::1', 'just below fc00::/7'],
    ['fe7f::1', 'just below fe80::/10'],
    ['2001:4860:4860::8888', 'public IPv6 next to Teredo'],
  ])('allows %s (%s)', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
  });

  it.each(['localhost', 'example.com', '', '127.1', '0x7f000001', '2130706433', '1.2.3.4.5', ':::1', '[::1]'])(
    'refuses %j: not a literal address',
    (s) => {
      expect(isForbiddenAddress(s)).toBe(true);
    },
  );

  it.each([
    ['::ffff:0:8.8.8.8', 'IPv4-translated public'],
    ['::8.8.8.8', 'IPv4-compatible public'],
    ['64:ff9b::8.8.8.8', 'NAT64 of a public address, dotted'],
    ['0:0:0:0:0:ffff:0808:0808', 'IPv4-mapped public, long form with leading zeros'],
  ])('allows %s (%s): judged by the IPv4 address it carries', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
  });

  it.each([
    ['::ffff:10.1.2.3', '::ffff:a01:203', 'IPv4-mapped private'],
    ['::ffff:100.64.0.1', '::ffff:6440:1', 'IPv4-mapped carrier-grade NAT'],
    ['64:ff9b::10.0.0.1', '64:ff9b::a00:1', 'NAT64 private'],
    ['64:ff9b::192.168.0.1', '64:ff9b::c0a8:1', 'NAT64 private 192.168/16'],
    ['64:ff9b::0.0.0.0', '64:ff9b::', 'NAT64 unspecified'],
  ])('refuses %s and %s (%s): the embedded IPv4 address is private', (dotted, hex) => {
    expect(isForbiddenAddress(dotted)).toBe(true);
    expect(isForbiddenAddress(hex)).toBe(true);
  });

  it('NAT64 and IPv4-mapped only unwrap their exact /96: a neighbouring prefix is plain IPv6', () => {
    // 64:ff9b:0:0:0:1::/96 is not the well-known NAT64 prefix: its low 32 bits are not an IPv4
    // destination, and the address is public IPv6.
    expect(isForbiddenAddress('64:ff9b::1:7f00:1')).toBe(false);
    expect(isForbiddenAddress('::fffe:7f00:1')).toBe(false);
    expect(isForbiddenAddress('1::ffff:7f00:1')).toBe(false);
  });

  it.each([
    ['2606:4700:4700::1111%eth-0', 'public IPv6 with a zone id ipaddr.js cannot read'],
    ['2606:4700:4700::1111%a.b', 'public IPv6, zone id with a dot'],
    ['2606:4700:4700::1111%x:y', 'public IPv6, zone id with a colon'],
  ])('fails closed on %j (%s): Node calls it IPv6, the parser refuses it', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it('a zone id ipaddr.js reads does not change the verdict', () => {
    expect(isForbiddenAddress('2606:4700:4700::1111%eth0')).toBe(false);
    expect(isForbiddenAddress('fe80::1%25')).toBe(true);
  });
});

describe('embeddedIpv4', () => {
  const carried = (ip: string) => embeddedIpv4(ipaddr.IPv6.parse(ip))?.toString() ?? null;
  it.each([
    ['::ffff:1.2.3.4', '1.2.3.4'],
    ['::ffff:102:304', '1.2.3.4'],
    ['::1.2.3.4', '1.2.3.4'],
    ['::ffff:0:1.2.3.4', '1.2.3.4'],
    ['64:ff9b::1.2.3.4', '1.2.3.4'],
    ['64:ff9b::fffe:fdfc', '255.254.253.252'],
    ['2002:102:304::1', '1.2.3.4'],
    ['2002:fffe:fdfc:1::', '255.254.253.252'],
  ])('%s carries %s', (ip, v4) => {
    expect(carried(ip)).toBe(v4);
  });

  it.each(['2606:4700:4700::1111', '64:ff9b:1::102:304', '2001::102:304', 'fe80::1.2.3.4', '::1:0:102:304'])('%s carries none', (ip) => {
    expect(carried(ip)).toBeNull();
  });
});
