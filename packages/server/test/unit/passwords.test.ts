import { describe, expect, it } from 'vitest';
import { decoyHash, generatePassword, hashPassword, PASSWORD_COST, verifyPassword } from '../../src/accounts/passwords.ts';

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

  it("the cost is OWASP's unless code that embeds the service passes another; it travels with the hash, and the decoy matches it", async () => {
    expect(PASSWORD_COST).toEqual({ N: 32768, r: 8, p: 1 });
    const cheap = { N: 1024, r: 8, p: 1 };
    const h = await hashPassword('pw', cheap);
    expect(h).toMatch(/^scrypt\$1024\$8\$1\$/);
    expect(await verifyPassword('pw', h)).toBe(true);
    expect(await decoyHash(cheap)).toMatch(/^scrypt\$1024\$8\$1\$/);
    expect(await decoyHash()).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await decoyHash(cheap)).toBe(await decoyHash({ ...cheap })); // one decoy per cost
  });

  it('a malformed stored hash never verifies', async () => {
    for (const stored of ['', 'plain', 'scrypt$1$2$3$$', 'bcrypt$2b$10$abc']) expect(await verifyPassword('x', stored)).toBe(false);
  });
});
