/**
 * Ways to write a forbidden address (loopback, private, link-local, the metadata service) in a
 * URL's authority that a check on the text would miss: IPv4 numbers in decimal, hex and octal,
 * short and zero-padded forms, percent-encoding, Unicode look-alikes, IPv6 spellings and
 * user-info in front of the host. One table for every scheme's tests (http(s) and the brokers'),
 * so the rules they prove can't drift apart.
 */

/** [what it is, the authority: `[userinfo@]host`]. */
export type HostSpelling = [string, string];

const ADDRESSES: Array<[string, [number, number, number, number]]> = [
  ['loopback', [127, 0, 0, 1]],
  ['private 10/8', [10, 0, 0, 1]],
  ['private 192.168/16', [192, 168, 1, 1]],
  ['link-local metadata', [169, 254, 169, 254]],
];

const hex = (n: number) => `0x${n.toString(16)}`;
const oct = (n: number) => `0${n.toString(8)}`;
const FULL_WIDTH_DIGIT = (d: string) => String.fromCodePoint(0xff10 + Number(d));

function ipv4Spellings(what: string, [a, b, c, d]: [number, number, number, number]): HostSpelling[] {
  const n = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
  const dotted = `${a}.${b}.${c}.${d}`;
  const percent = [...dotted].map((ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`).join('');
  return [
    [`${what}: dotted`, dotted],
    [`${what}: trailing dot`, `${dotted}.`],
    [`${what}: one decimal number`, String(n)],
    [`${what}: one hex number`, hex(n)],
    [`${what}: one hex number, upper case`, `0X${n.toString(16).toUpperCase()}`],
    [`${what}: one octal number`, oct(n)],
    [`${what}: dotted hex`, [a, b, c, d].map(hex).join('.')],
    [`${what}: dotted octal`, [a, b, c, d].map(oct).join('.')],
    [`${what}: zero-padded (octal)`, [a, b, c, d].map((x) => `0${x.toString(8).padStart(4, '0')}`).join('.')],
    [`${what}: three parts`, `${a}.${b}.${(c << 8) + d}`],
    [`${what}: two parts`, `${a}.${(b << 16) + (c << 8) + d}`],
    [`${what}: two parts, hex`, `${hex(a)}.${hex((b << 16) + (c << 8) + d)}`],
    [`${what}: percent-encoded`, percent],
    [`${what}: percent-encoded first part`, `${[...String(a)].map((ch) => `%3${ch}`).join('')}.${b}.${c}.${d}`],
    [`${what}: full-width digits`, [...dotted].map((ch) => (ch === '.' ? '.' : FULL_WIDTH_DIGIT(ch))).join('')],
    [`${what}: ideographic full stops`, [a, b, c, d].join('\u3002')],
    [`${what}: full-width full stops`, [a, b, c, d].join('\uff0e')],
    [`${what}: after encoded user-info`, `public.example%40x@${dotted}`],
    [`${what}: decimal, after user-info with an encoded colon`, `user%3Apublic.example:pw@${n}`],
  ];
}

/** Every spelling: each forbidden IPv4 address in each form, then names and IPv6. */
export const FORBIDDEN_HOST_SPELLINGS: readonly HostSpelling[] = [
  ...ADDRESSES.flatMap(([what, parts]) => ipv4Spellings(what, parts)),
  ['localhost', 'localhost'],
  ['localhost, upper case, trailing dot', 'LOCALHOST.'],
  ['localhost, percent-encoded', '%6C%6F%63%61%6C%68%6F%73%74'],
  ['localhost, circled letters', 'ⓛⓞⓒⓐⓛⓗⓞⓢⓣ'],
  ['a .localhost name', 'api.localhost'],
  ['a .internal name', 'metadata.google.internal'],
  ['unspecified 0.0.0.0 as 0', '0'],
  ['IPv6 loopback', '[::1]'],
  ['IPv6 loopback, long', '[0:0:0:0:0:0:0:1]'],
  ['IPv4-mapped loopback', '[::ffff:127.0.0.1]'],
  ['IPv4-mapped metadata, hex', '[::ffff:a9fe:a9fe]'],
  ['IPv6 link-local', '[fe80::1]'],
  ['IPv6 unique-local', '[fd00::1]'],
];

/** Public addresses and names written the same ways: a rule must not refuse these. */
export const PUBLIC_HOST_SPELLINGS: readonly HostSpelling[] = [
  ['public name', 'broker.example.com'],
  ['public address', '93.184.216.34'],
  ['public address, one decimal number', String((93 << 24) + (184 << 16) + (216 << 8) + 34)],
  ['public name with user-info', 'user:pass@broker.example.com'],
];
