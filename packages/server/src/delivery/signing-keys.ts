import type { SecretBox } from '../security/encryption.ts';

/** Endpoints whose signing secrets one worker keeps decrypted (about 200 bytes each). */
export const SIGNING_KEY_CACHE_SIZE = 10_000;

/**
 * Decrypted signing secrets for the worker, so an attempt doesn't pay an AES-GCM decryption
 * (with its base64 decoding and cipher setup) for a secret it decrypted a moment ago.
 *
 * Entries are found by the stored ciphertext and answer only for the endpoint they were opened
 * for, never by the endpoint alone: a rotation writes a new ciphertext (and a re-encryption under
 * a new key does too), so the next claim carries a key this cache has never seen and the new
 * secret signs at once; nothing has to invalidate anything. The endpoint id is the ciphertext's
 * associated data, so a ciphertext copied onto another endpoint's row is not answered from here
 * and still fails its own decryption. Failures are not cached. Least recently used entries go first when full.
 */
export class SigningKeys {
  /** By ciphertext (unique per sealing: a fresh IV each time), with the associated data it was opened with. */
  private readonly cache = new Map<string, { aad: string; secret: string }>();

  constructor(
    private readonly secrets: SecretBox,
    private readonly capacity = SIGNING_KEY_CACHE_SIZE,
  ) {}

  /** The secret in clear; throws like `SecretBox.decrypt` when it can't be decrypted. */
  decrypt(ciphertext: string, endpointId: string): string {
    // Keyed by the ciphertext alone and checked against the endpoint, rather than by the two
    // joined: joining built (and hashed) a new string of ~100 characters on every attempt.
    const hit = this.cache.get(ciphertext);
    if (hit !== undefined && hit.aad === endpointId) {
      // Move to the back: Map iteration order is insertion order, so the front is the least recently used.
      this.cache.delete(ciphertext);
      this.cache.set(ciphertext, hit);
      return hit.secret;
    }
    // A miss, or the ciphertext under another endpoint (copied there): that decryption fails.
    const secret = this.secrets.decrypt(ciphertext, endpointId);
    if (this.cache.size >= this.capacity) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(ciphertext, { aad: endpointId, secret });
    return secret;
  }

  get size(): number {
    return this.cache.size;
  }
}
