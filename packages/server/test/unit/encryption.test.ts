import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { SecretBox, resolveEncryptionKey } from '../../src/security/encryption.ts';

const key = randomBytes(32);
/** A fresh box per use: a constructor that throws fails the test that uses it, not the file's import. */
const box = () => new SecretBox(key);
const SECRET = 'whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDE';

/** Flips one bit of one base64url part of `v1.<iv>.<tag>.<ct>`. */
function flipBit(sealed: string, part: 1 | 2 | 3, byte = 0): string {
  const parts = sealed.split('.');
  const raw = Buffer.from(parts[part]!, 'base64url');
  raw[byte] = raw[byte]! ^ 0x01;
  parts[part] = raw.toString('base64url');
  return parts.join('.');
}

function withPart(sealed: string, part: 1 | 2 | 3, f: (b: Buffer) => Buffer): string {
  const parts = sealed.split('.');
  parts[part] = f(Buffer.from(parts[part]!, 'base64url')).toString('base64url');
  return parts.join('.');
}

describe('SecretBox (signing secrets at rest, AES-256-GCM)', () => {
  it('round-trips a signing secret, unicode and the empty string', () => {
    for (const text of [SECRET, 'ü€😀 text', '', 'x'.repeat(100_000)]) {
      expect(box().decrypt(box().encrypt(text, 'we_1'), 'we_1')).toBe(text);
    }
  });

  it('never contains the plaintext and uses a fresh IV each time', () => {
    const a = box().encrypt(SECRET, 'we_1');
    const b = box().encrypt(SECRET, 'we_1');
    expect(a).not.toBe(b);
    expect(a.split('.')[1]).not.toBe(b.split('.')[1]);
    expect(a).not.toContain(SECRET);
    expect(a).not.toContain(SECRET.slice(6));
    expect(a).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/);
  });

  it('detects a flipped bit in the ciphertext, the tag or the IV', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    for (const part of [1, 2, 3] as const) {
      expect(() => box().decrypt(flipBit(sealed, part), 'we_1'), `part ${part}`).toThrow();
      expect(() => box().decrypt(flipBit(sealed, part, 5), 'we_1'), `part ${part}, byte 5`).toThrow();
    }
  });

  it('refuses a truncated authentication tag (a short tag would make forgery cheap)', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    for (const length of [4, 8, 12, 15]) {
      expect(
        () =>
          box().decrypt(
            withPart(sealed, 2, (t) => t.subarray(0, length)),
            'we_1',
          ),
        `tag of ${length} bytes`,
      ).toThrow();
    }
  });

  it('refuses a changed IV length, truncated or extended ciphertext', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    expect(() =>
      box().decrypt(
        withPart(sealed, 1, (iv) => iv.subarray(0, 8)),
        'we_1',
      ),
    ).toThrow();
    expect(() =>
      box().decrypt(
        withPart(sealed, 3, (ct) => ct.subarray(0, ct.length - 1)),
        'we_1',
      ),
    ).toThrow();
    expect(() =>
      box().decrypt(
        withPart(sealed, 3, (ct) => Buffer.concat([ct, Buffer.from([0])])),
        'we_1',
      ),
    ).toThrow();
  });

  it('is bound to its associated data: the wrong row id does not decrypt', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    expect(() => box().decrypt(sealed, 'we_2')).toThrow();
    expect(() => box().decrypt(sealed, '')).toThrow();
    expect(() => box().decrypt(sealed, 'we_1 ')).toThrow();
  });

  it('a different key does not decrypt', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    expect(() => new SecretBox(randomBytes(32)).decrypt(sealed, 'we_1')).toThrow();
  });

  it('refuses malformed boxes', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    for (const bad of ['', 'v1', 'v1.a.b', `v2${sealed.slice(2)}`, `${sealed}.extra`, sealed.replace(/\./g, ':')]) {
      expect(() => box().decrypt(bad, 'we_1'), bad).toThrow();
    }
  });

  it('format checks come first: a box not of the form v1.<12-byte iv>.<16-byte tag>.<ct> is refused as unrecognised, before any decryption', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    const [, iv, tag, ct] = sealed.split('.') as [string, string, string, string];
    const unrecognised = [
      ['', 'empty'],
      [`${iv}.${tag}.${ct}`, 'no version'],
      [`v2.${iv}.${tag}.${ct}`, 'another version'],
      [`V1.${iv}.${tag}.${ct}`, 'version in upper case'],
      [`v1..${tag}.${ct}`, 'empty iv'],
      [`v1.${iv}..${ct}`, 'empty tag'],
      [`v1.${iv}.${tag}`, 'no ciphertext part'],
      [`v1.${iv}.${tag}.${ct}.x`, 'a fifth part'],
      [withPart(sealed, 1, (b) => b.subarray(0, 11)), '11-byte iv'],
      [withPart(sealed, 1, (b) => Buffer.concat([b, Buffer.from([0])])), '13-byte iv'],
      [withPart(sealed, 2, (b) => b.subarray(0, 15)), '15-byte tag'],
      [withPart(sealed, 2, (b) => Buffer.concat([b, Buffer.from([0])])), '17-byte tag'],
    ] as const;
    for (const [bad, why] of unrecognised) expect(() => box().decrypt(bad, 'we_1'), why).toThrow(/^Unrecognised ciphertext format\.$/);
  });

  it('a well-formed box that was tampered with fails authentication, not the format check', () => {
    const sealed = box().encrypt(SECRET, 'we_1');
    for (const part of [1, 2, 3] as const) {
      expect(() => box().decrypt(flipBit(sealed, part), 'we_1'), `part ${part}`).toThrow(/unable to authenticate data/i);
    }
    expect(() => box().decrypt(sealed, 'we_2')).toThrow(/unable to authenticate data/i);
  });

  it('an empty plaintext seals to an empty ciphertext part, which is well-formed', () => {
    const sealed = box().encrypt('', 'we_1');
    expect(sealed.split('.')).toHaveLength(4);
    expect(sealed.split('.')[3]).toBe('');
    expect(box().decrypt(sealed, 'we_1')).toBe('');
  });

  it('tags: bound to purpose and data, verified in constant time, refusing any other candidate', () => {
    const t = box().tag('csrf', 'cs_1');
    expect(t).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(box().tag('csrf', 'cs_1')).toBe(t);
    expect(box().verifyTag('csrf', 'cs_1', t)).toBe(true);
    expect(box().verifyTag('csrf', 'cs_2', t)).toBe(false);
    expect(box().verifyTag('other', 'cs_1', t)).toBe(false);
    expect(box().verifyTag('csrf', 'cs_1', t.slice(0, -1))).toBe(false);
    expect(box().verifyTag('csrf', 'cs_1', `${t}A`)).toBe(false);
    expect(box().verifyTag('csrf', 'cs_1', '')).toBe(false);
    expect(box().tag('csrf', 'cs_1')).not.toBe(box().tag('csrf2', 'cs_1'));
    expect(new SecretBox(randomBytes(32)).verifyTag('csrf', 'cs_1', t)).toBe(false);
  });

  it('needs a 32-byte key', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow(ConfigError);
    expect(() => new SecretBox(randomBytes(33))).toThrow(/^The encryption key must be 32 bytes \(64 hex characters\)\.$/);
  });
});

describe('resolveEncryptionKey', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('uses the configured key as is', () => {
    expect(resolveEncryptionKey({ configured: key, databaseUrl: 'postgres://x/y', dataDir: '/nonexistent', dev: false })).toBe(key);
  });

  it('with DATABASE_URL and no key: a ConfigError that names the variable and says how to make a key', () => {
    let message = '';
    try {
      resolveEncryptionKey({ configured: undefined, databaseUrl: 'postgres://x/y', dataDir: '/nonexistent', dev: false });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain('PAYHOOKS_ENCRYPTION_KEY');
    expect(message).toContain('openssl rand -hex 32');
  });

  it('embedded: generates a key file (mode 0600) once and reads the same key afterwards', () => {
    dir = mkdtempSync(join(tmpdir(), 'payhooks-key-'));
    const first = resolveEncryptionKey({ configured: undefined, databaseUrl: undefined, dataDir: dir, dev: false });
    expect(first).toHaveLength(32);
    const file = join(dir, 'encryption.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe(`${first.toString('hex')}\n`);
    const second = resolveEncryptionKey({ configured: undefined, databaseUrl: undefined, dataDir: dir, dev: false });
    expect(second.equals(first)).toBe(true);
  });

  it.each([
    [`zz${'ab'.repeat(32)}`, 'junk before 64 hex characters'],
    [`${'ab'.repeat(32)}zz`, 'junk after 64 hex characters'],
    [`${'ab'.repeat(32)}a`, '65 hex characters'],
    [`${'ab'.repeat(31)}a`, '63 hex characters'],
  ])('embedded: a key file holding %j (%s) is refused, naming the file', (content) => {
    dir = mkdtempSync(join(tmpdir(), 'payhooks-key-'));
    const file = join(dir, 'encryption.key');
    writeFileSync(file, `${content}\n`);
    expect(() => resolveEncryptionKey({ configured: undefined, databaseUrl: undefined, dataDir: dir!, dev: false })).toThrow(
      `${file} does not hold 64 hex characters; restore it from a backup.`,
    );
  });

  it('embedded: a key file with upper-case hex and surrounding whitespace is read', () => {
    dir = mkdtempSync(join(tmpdir(), 'payhooks-key-'));
    writeFileSync(join(dir, 'encryption.key'), `  ${'AB'.repeat(32)}\r\n`);
    expect(resolveEncryptionKey({ configured: undefined, databaseUrl: undefined, dataDir: dir, dev: false }).toString('hex')).toBe(
      'ab'.repeat(32),
    );
  });

  it('embedded: a damaged key file is a ConfigError, not a new key', () => {
    dir = mkdtempSync(join(tmpdir(), 'payhooks-key-'));
    writeFileSync(join(dir, 'encryption.key'), 'not hex\n');
    expect(() => resolveEncryptionKey({ configured: undefined, databaseUrl: undefined, dataDir: dir!, dev: false })).toThrow(ConfigError);
    expect(readFileSync(join(dir, 'encryption.key'), 'utf8')).toBe('not hex\n');
  });
});
