import { describe, expect, it } from 'vitest';
import { isForbiddenAddress } from '../../src/security/ip-ranges.ts';

/** SSRF guard: which literal addresses a webhook may never reach (ARCHITECTURE.md, Security). */
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

  it.each(['localhost', 'example.com', '', '127.1', '0x7f000001', '2130706433', '1.2.3.4.5', ':::1', '[::1]'])('refuses %j: not a literal address', (s) => {
    expect(isForbiddenAddress(s)).toBe(true);
  });
});
