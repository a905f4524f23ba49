import { createSecretKey, type KeyObject } from 'node:crypto';
import { standardWebhooksKey } from '@payhooks/contract';
import type { SecretBox } from '../security/encryption.ts';
import { privateKeyFrom, signingKeyAad } from '../security/signing-key-pairs.ts';

/** Endpoints whose signing secrets one worker keeps decrypted (about 200 bytes each, plus a key object for Standard Webhooks endpoints). */
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
 *
 * An entry also keeps the secret's Standard Webhooks key (what follows `whsec_`, base64-decoded,
 * as a KeyObject), made the first time an attempt of a Standard Webhooks endpoint needs it: one
 * decoding per secret, not one per attempt.
 */
export class SigningKeys {
  /** By ciphertext (unique per sealing: a fresh IV each time), with the associated data it was opened with. */
  private readonly cache = new Map<string, OpenedSecret>();
  /**
   * ed25519 private keys, parsed, by their sealed form: a miss costs a decryption and a PKCS#8
   * parse (tens of microseconds), a hit neither. Keyed and bounded like the secrets.
   */
  private readonly privateKeys = new Map<string, { aad: string; key: KeyObject }>();

  constructor(
    private readonly secrets: SecretBox,
    private readonly capacity = SIGNING_KEY_CACHE_SIZE,
  ) {}

  /** The secret in clear; throws like `SecretBox.decrypt` when it can't be decrypted. */
  decrypt(ciphertext: string, endpointId: string): string {
    return this.open(ciphertext, endpointId).secret;
  }

  /** The secret in clear and its Standard Webhooks key; throws like `SecretBox.decrypt` when it can't be decrypted. */
  open(ciphertext: string, endpointId: string): OpenedSecret {
    // Keyed by the ciphertext alone and checked against the endpoint, rather than by the two
    // joined: joining built (and hashed) a new string of ~100 characters on every attempt.
    const hit = this.cache.get(ciphertext);
    if (hit !== undefined && hit.aad === endpointId) {
      // Move to the back: Map iteration order is insertion order, so the front is the least recently used.
      this.cache.delete(ciphertext);
      this.cache.set(ciphertext, hit);
      return hit;
    }
    // A miss, or the ciphertext under another endpoint (copied there): that decryption fails.
    const opened = new OpenedSecret(endpointId, this.secrets.decrypt(ciphertext, endpointId));
    if (this.cache.size >= this.capacity) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(ciphertext, opened);
    return opened;
  }

  /** The private key sealed for `endpointId`; throws when it can't be opened or parsed. */
  privateKey(ciphertext: string, endpointId: string): KeyObject {
    const hit = this.privateKeys.get(ciphertext);
    if (hit !== undefined && hit.aad === endpointId) {
      this.privateKeys.delete(ciphertext);
      this.privateKeys.set(ciphertext, hit);
      return hit.key;
    }
    const key = privateKeyFrom(this.secrets.decrypt(ciphertext, signingKeyAad(endpointId)));
    if (this.privateKeys.size >= this.capacity) this.privateKeys.delete(this.privateKeys.keys().next().value!);
    this.privateKeys.set(ciphertext, { aad: endpointId, key });
    return key;
  }

  get size(): number {
    return this.cache.size;
  }

  get privateKeyCount(): number {
    return this.privateKeys.size;
  }
}

/** A decrypted signing secret, as the cache keeps it. */
export class OpenedSecret {
  /** Undefined until first asked for; null when the secret has no Standard Webhooks key. */
  private key: KeyObject | null | undefined = undefined;

  constructor(
    /** The associated data it was opened with: its endpoint's id. */
    readonly aad: string,
    readonly secret: string,
  ) {}

  /**
   * The Standard Webhooks key (standardWebhooksKey in @payhooks/contract), decoded once; null for
   * a secret made before Standard Webhooks support, which no Standard Webhooks library can take
   * (its attempts then carry no `v1,` entry for it).
   */
  get webhookKey(): KeyObject | null {
    if (this.key === undefined) {
      const raw = standardWebhooksKey(this.secret);
      this.key = raw === null ? null : createSecretKey(raw);
    }
    return this.key;
  }
}

/** The Standard Webhooks keys of the live secrets, new first, leaving out a secret that has none. */
export function webhookKeysOf(current: OpenedSecret, previous: OpenedSecret | null): KeyObject[] {
  const keys: KeyObject[] = [];
  if (current.webhookKey) keys.push(current.webhookKey);
  if (previous?.webhookKey) keys.push(previous.webhookKey);
  return keys;
}
