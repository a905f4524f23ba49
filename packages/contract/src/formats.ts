/**
 * The shapes a receiver accepts, as regular-expression bodies without anchors. Every receiver
 * library checks them: the TypeScript ones through `anchored`, the five others through files
 * `scripts/generate.ts` writes from these, each anchored in its own language's syntax. So all of
 * them agree on what is malformed, and a change here reaches every one.
 */
export const SIGNATURE_FORMATS = {
  /** `t`: unix seconds, at most 15 ASCII digits (`\d` would take other scripts' digits in some languages). */
  timestamp: '[0-9]{1,15}',
  /** `v1`: HMAC-SHA256 as 64 lowercase hex digits. */
  v1: '[0-9a-f]{64}',
  /**
   * `v1a`: an ed25519 signature, base64 (standard alphabet, padded) of 64 bytes. The last
   * character before `==` carries 2 data bits and 4 zero bits, so only A, Q, g or w can stand
   * there: one spelling per signature.
   */
  v1a: '[A-Za-z0-9+/]{85}[AQgw]==',
  /** Any other scheme's name: skipped (the header grows additively) when it has this shape. */
  scheme: '[a-z][a-z0-9]*',
  /** What follows `whpk_` in a public key: canonical base64 of its 32 bytes. */
  publicKey: '[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=',
} as const;

/** A format that must match a whole string. */
export const anchored = (format: string): RegExp => new RegExp(`^(?:${format})$`);
