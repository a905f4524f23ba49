import { randomBytes, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/security/encryption.ts';
import { SigningKeys } from '../../src/delivery/signing-keys.ts';
import { parsePublicKey } from '@payhooks/contract';
import { generateSigningKeyPair, whpkOf } from '../../src/security/signing-key-pairs.ts';

const box = new SecretBox(randomBytes(32));

/** Counts the decryptions that reach the SecretBox. */
function counting(inner: SecretBox): { box: SecretBox; calls: () => number } {
  let n = 0;
  const wrapped = Object.create(inner) as SecretBox;
  wrapped.decrypt = (ct: string, ad: string) => {
    n++;
    return inner.decrypt(ct, ad);
  };
  return { box: wrapped, calls: () => n };
}

describe("the worker's decrypted signing keys", () => {
  it('decrypts a ciphertext once, then answers from memory', () => {
    const { box: b, calls } = counting(box);
    const keys = new SigningKeys(b);
    const ct = box.encrypt('whsec_one', 'we_1');
    expect(keys.decrypt(ct, 'we_1')).toBe('whsec_one');
    expect(keys.decrypt(ct, 'we_1')).toBe('whsec_one');
    expect(calls()).toBe(1);
  });

  it('a rotated secret (a new ciphertext for the same endpoint) is used at once, and so is a re-encryption', () => {
    const keys = new SigningKeys(box);
    const before = box.encrypt('whsec_old', 'we_1');
    expect(keys.decrypt(before, 'we_1')).toBe('whsec_old');
    const rotated = box.encrypt('whsec_new', 'we_1');
    expect(keys.decrypt(rotated, 'we_1')).toBe('whsec_new');
    // The same secret sealed again (a new IV) is simply another entry with the same value.
    expect(keys.decrypt(box.encrypt('whsec_new', 'we_1'), 'we_1')).toBe('whsec_new');
    // Under another encryption key, the old ciphertext is refused, not served from memory.
    const rekeyed = new SigningKeys(new SecretBox(randomBytes(32)));
    expect(() => rekeyed.decrypt(before, 'we_1')).toThrow();
  });

  it('keeps the associated-data check: a cached ciphertext copied onto another endpoint still fails there', () => {
    const keys = new SigningKeys(box);
    const ct = box.encrypt('whsec_a', 'we_a');
    expect(keys.decrypt(ct, 'we_a')).toBe('whsec_a');
    expect(() => keys.decrypt(ct, 'we_b')).toThrow();
  });

  it('does not cache failures: a ciphertext that failed is tried again', () => {
    const { box: b, calls } = counting(box);
    const keys = new SigningKeys(b);
    expect(() => keys.decrypt('v1.garbage', 'we_1')).toThrow();
    expect(() => keys.decrypt('v1.garbage', 'we_1')).toThrow();
    expect(calls()).toBe(2);
    expect(keys.size).toBe(0);
  });

  it('holds at most its capacity, dropping the least recently used', () => {
    const { box: b, calls } = counting(box);
    const keys = new SigningKeys(b, 2);
    const [c1, c2, c3] = ['we_1', 'we_2', 'we_3'].map((id) => box.encrypt(`whsec_${id}`, id)) as [string, string, string];
    keys.decrypt(c1, 'we_1');
    keys.decrypt(c2, 'we_2');
    keys.decrypt(c1, 'we_1'); // we_1 is now the most recently used
    keys.decrypt(c3, 'we_3'); // evicts we_2
    expect(keys.size).toBe(2);
    const before = calls();
    expect(keys.decrypt(c1, 'we_1')).toBe('whsec_we_1');
    expect(calls()).toBe(before);
    expect(keys.decrypt(c2, 'we_2')).toBe('whsec_we_2');
    expect(calls()).toBe(before + 1);
  });

  it('ed25519 private keys: opened and parsed once per sealed key, then the same KeyObject; bound to their endpoint', () => {
    const { box: b, calls } = counting(box);
    const keys = new SigningKeys(b);
    const pair = generateSigningKeyPair(box, 'we_1');
    const key = keys.privateKey(pair.ciphertext, 'we_1');
    expect(keys.privateKey(pair.ciphertext, 'we_1')).toBe(key);
    expect(calls()).toBe(1);
    const message = Buffer.from('1763859605.{"id":"evt_1"}');
    const signature = sign(null, message, key);
    expect(verify(null, message, parsePublicKey(whpkOf(pair.publicKey)), signature)).toBe(true);
    // The sealed key copied onto another endpoint is not answered from memory and fails to open.
    expect(() => keys.privateKey(pair.ciphertext, 'we_2')).toThrow();
    // Nor does the endpoint's sealed secret open as its key (another purpose in the associated data).
    expect(() => keys.privateKey(box.encrypt('whsec_one', 'we_1'), 'we_1')).toThrow();
  });
});
