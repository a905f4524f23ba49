import { describe, expect, it } from 'vitest';
import { generatePassword, hashPassword, verifyPassword } from '../../src/portal/passwords.ts';

describe('portal passwords (scrypt)', () => {
  it('a hash verifies its password only; salts differ; the parameters are stored with the hash', async () => {
    const password = generatePassword();
    expect(password).toMatch(/^[0-9A-Za-z]{20}$/);
    const [h1, h2] = await Promise.all([hashPassword(password), hashPassword(password)]);
    expect(h1).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(h1).not.toBe(h2);
    expect(h1).not.toContain(password);
    expect(await verifyPassword(password, h1)).toBe(true);
    expect(await verifyPassword(password, h2)).toBe(true);
    expect(await verifyPassword(`${password}x`, h1)).toBe(false);
    expect(await verifyPassword('', h1)).toBe(false);
  });

  it('a malformed stored hash never verifies', async () => {
    for (const stored of ['', 'plain', 'scrypt$1$2$3$$', 'bcrypt$2b$10$abc']) expect(await verifyPassword('x', stored)).toBe(false);
  });
});
