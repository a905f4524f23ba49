import type { SecretBox } from '../security/encryption.ts';

/** Endpoints whose signing secrets one worker keeps decrypted (about 200 bytes each). */
export const SIGNING_KEY_CACHE_SIZE = 10_000;

/**
 * Decrypted signing secrets for the worker, so an attempt doesn't pay an AES-GCM decryption
 * (with its base64 decoding and cipher setup) for a secret it decrypted a moment ago.
 *
 * Entries are keyed by the endpoint id AND the stored ciphertext, never by the endpoint alone:
 * a rotation writes a new ciphertext (and a re-encryption under a new key does too), so the
 * next claim carries a key this cache has never seen and the new secret signs at once; nothing
 * has to invalidate anything. The endpoint id is the ciphertext's associated data, so a
 * ciphertext copied onto another endpoint's row is a different key here and still fails its
 * own decryption. Failures are not cached. Least recently used entries go first when full.
 */
export class SigningKeys {
  private readonly cache = new Map<string, string>();

  constructor(
    private readonly secrets: SecretBox,
    private readonly capacity = SIGNING_KEY_CACHE_SIZE,
  ) {}

  /** The secret in clear; throws like `SecretBox.decrypt` when it can't be decrypted. */
  decrypt(ciphertext: string, endpointId: string): string {
    const key = `${endpointId}\n${ciphertext}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      // Move to the back: Map iteration order is insertion order, so the front is the least recently used.
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const secret = this.secrets.decrypt(ciphertext, endpointId);
    if (this.cache.size >= this.capacity) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, secret);
    return secret;
  }

  get size(): number {
    return this.cache.size;
  }
}
