import { describe, expect, it } from 'vitest';
import {
  RECOVERY_CODE_COUNT,
  TOTP_PERIOD_S,
  hashRecoveryCode,
  isRecoveryCode,
  newRecoveryCodes,
  newTotpSecret,
  totpCode,
  totpUri,
  verifyTotp,
} from '../../src/accounts/two-factor.ts';

// RFC 6238 appendix B: the SHA-1 seed "12345678901234567890" (base32 GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ), 8 digits there, 6 here.
const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

describe('TOTP (RFC 6238)', () => {
  it('matches the RFC test vectors (the last 6 of their 8 digits)', () => {
    const vectors: Array<[number, string]> = [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
    ];
    for (const [seconds, eight] of vectors) expect(totpCode(RFC_SECRET, new Date(seconds * 1000)), String(seconds)).toBe(eight.slice(2));
  });

  it('accepts a code one step either side of now, not two; returns the step it matched', () => {
    const now = new Date(1_800_000_000_000);
    const step = Math.floor(now.getTime() / 1000 / TOTP_PERIOD_S);
    const at = (s: number) => totpCode(RFC_SECRET, new Date(s * TOTP_PERIOD_S * 1000));
    expect(verifyTotp(RFC_SECRET, at(step), now, null)).toBe(step);
    expect(verifyTotp(RFC_SECRET, at(step - 1), now, null)).toBe(step - 1);
    expect(verifyTotp(RFC_SECRET, at(step + 1), now, null)).toBe(step + 1);
    expect(verifyTotp(RFC_SECRET, at(step - 2), now, null)).toBeNull();
    expect(verifyTotp(RFC_SECRET, at(step + 2), now, null)).toBeNull();
  });

  it('a code is good once: its step, or an earlier one, is refused after use', () => {
    const now = new Date(1_800_000_000_000);
    const code = totpCode(RFC_SECRET, now);
    const step = verifyTotp(RFC_SECRET, code, now, null)!;
    expect(verifyTotp(RFC_SECRET, code, now, step)).toBeNull();
    const earlier = totpCode(RFC_SECRET, new Date(now.getTime() - TOTP_PERIOD_S * 1000));
    expect(verifyTotp(RFC_SECRET, earlier, now, step)).toBeNull();
  });

  it('anything but six digits is refused without computing; spaces an app shows are allowed', () => {
    const now = new Date(1_800_000_000_000);
    const code = totpCode(RFC_SECRET, now);
    expect(verifyTotp(RFC_SECRET, `${code.slice(0, 3)} ${code.slice(3)}`, now, null)).not.toBeNull();
    for (const bad of ['', '12345', '1234567', 'abcdef', `${code}0`]) expect(verifyTotp(RFC_SECRET, bad, now, null), bad).toBeNull();
  });

  it('a new secret is 20 random bytes in base32; its URI is what authenticator apps read', () => {
    const secret = newTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(newTotpSecret()).not.toBe(secret);
    const uri = new URL(totpUri(secret, 'ana@shop.example'));
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.searchParams.get('secret')).toBe(secret);
    expect(uri.searchParams.get('issuer')).toBe('payhooks');
    expect(uri.searchParams.get('digits')).toBe('6');
    expect(uri.searchParams.get('period')).toBe('30');
  });
});

describe('recovery codes', () => {
  it('ten distinct codes of 10 letters from an alphabet without look-alikes, shown as xxxxx-xxxxx', () => {
    const codes = newRecoveryCodes();
    expect(codes).toHaveLength(RECOVERY_CODE_COUNT);
    expect(new Set(codes).size).toBe(RECOVERY_CODE_COUNT);
    for (const c of codes) {
      expect(c).toMatch(/^[a-hjkmnp-z2-9]{5}-[a-hjkmnp-z2-9]{5}$/);
      expect(isRecoveryCode(c)).toBe(true);
    }
    expect(isRecoveryCode('123456')).toBe(false);
  });

  it('hash the same whatever the case, dashes or spaces a user types', () => {
    expect(hashRecoveryCode('ABCDE-FGHJK')).toBe(hashRecoveryCode('abcdefghjk'));
    expect(hashRecoveryCode(' abcde fghjk ')).toBe(hashRecoveryCode('abcde-fghjk'));
    expect(hashRecoveryCode('abcde-fghjk')).not.toBe(hashRecoveryCode('abcde-fghjm'));
  });
});
