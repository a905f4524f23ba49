import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../errors.ts';

const IV_LENGTH = 12;
const TAG_LENGTH = 16;

/**
 * AES-256-GCM for secrets that must be readable again (signing secrets are needed to sign, so
 * they can't be hashed). Format: `v1.<iv>.<tag>.<ciphertext>`, base64url parts. The caller passes
 * associated data (the row id) so a ciphertext copied onto another row fails to decrypt.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new ConfigError('The encryption key must be 32 bytes (64 hex characters).');
    this.#key = key;
  }

  encrypt(plaintext: string, associatedData: string): string {
    const iv = randomBytes(IV_LENGTH);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_LENGTH });
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  decrypt(box: string, associatedData: string): string {
    const parts = box.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') throw new Error('Unrecognised ciphertext format.');
    const [, iv, tag, ct] = parts as [string, string, string, string];
    // An empty or mis-sized part fails here too (the ciphertext part may be empty: "" sealed).
    const ivBytes = Buffer.from(iv, 'base64url');
    const tagBytes = Buffer.from(tag, 'base64url');
    // GCM would otherwise verify a truncated tag against its prefix (4 bytes = 2^32 forgery work).
    if (ivBytes.length !== IV_LENGTH || tagBytes.length !== TAG_LENGTH) throw new Error('Unrecognised ciphertext format.');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, ivBytes, { authTagLength: TAG_LENGTH });
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(tagBytes);
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }

  /**
   * An HMAC-SHA256 tag of `data` for one `purpose` (e.g. the hosted page's CSRF token). The
   * purpose is keyed in first, so a tag made for one purpose never verifies for another.
   */
  tag(purpose: string, data: string): string {
    const subkey = createHmac('sha256', this.#key).update(`payhooks tag: ${purpose}`).digest();
    return createHmac('sha256', subkey).update(data, 'utf8').digest('base64url');
  }

  /** Constant-time check of a `tag`. */
  verifyTag(purpose: string, data: string, candidate: string): boolean {
    const expected = Buffer.from(this.tag(purpose, data));
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

/**
 * The key from config, or for the embedded database one generated into
 * `<dataDir>/encryption.key` (mode 0600) on first start. With PostgreSQL the key must be given:
 * several processes share the database and must share the key.
 */
export function resolveEncryptionKey(options: {
  configured: Buffer | undefined;
  databaseUrl: string | undefined;
  dataDir: string;
  dev: boolean;
}): Buffer {
  if (options.configured) return options.configured;
  if (options.databaseUrl && !options.dev) {
    throw new ConfigError(
      'PAYHOOKS_ENCRYPTION_KEY is required when DATABASE_URL is set (every process must share it). ' +
        'Make one with `openssl rand -hex 32` and set it in the environment of every payhooks process.',
    );
  }
  mkdirSync(options.dataDir, { recursive: true });
  const file = join(options.dataDir, 'encryption.key');
  if (existsSync(file)) {
    const hex = readFileSync(file, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/i.test(hex)) throw new ConfigError(`${file} does not hold 64 hex characters; restore it from a backup.`);
    return Buffer.from(hex, 'hex');
  }
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}
