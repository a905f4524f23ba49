import { eq, sql } from 'drizzle-orm';
import type { Queryable } from '../db/client.ts';
import { portalUsers, type PortalUserRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { randomBase62 } from '../ids.ts';
import { generatePassword, hashPassword, PASSWORD_COST, type ScryptCost } from './passwords.ts';

/** A portal user as created: the password is in clear here and nowhere else, ever. */
export interface CreatedPortalUser {
  id: string;
  platform_id: string;
  email: string;
  password: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Trimmed and lower-cased; refuses what can't be an address. */
export function normaliseEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) {
    throw new AppError('invalid_request', 'email_invalid', `'${raw.slice(0, 100)}' is not an email address.`, { param: 'email' });
  }
  return email;
}

/**
 * Creates a portal user of `platformId` with a generated password (or `password`, for the
 * development demo user). Emails are unique across the installation: a second user with the
 * same address is a 409 `email_taken`.
 */
export async function createPortalUser(
  db: Queryable,
  platformId: string,
  rawEmail: string,
  password = generatePassword(),
  cost: ScryptCost = PASSWORD_COST,
): Promise<CreatedPortalUser> {
  const email = normaliseEmail(rawEmail);
  if (await findUserByEmail(db, email)) {
    throw new AppError('conflict', 'email_taken', `A portal user with the email ${email} already exists.`, { param: 'email' });
  }
  const id = `usr_${randomBase62(24)}`;
  await db.insert(portalUsers).values({ id, platformId, email, passwordHash: await hashPassword(password, cost) });
  return { id, platform_id: platformId, email, password };
}

export async function findUserByEmail(db: Queryable, email: string): Promise<PortalUserRow | undefined> {
  const [row] = await db
    .select()
    .from(portalUsers)
    .where(eq(sql`lower(${portalUsers.email})`, email.trim().toLowerCase()));
  return row;
}

export async function findUserById(db: Queryable, id: string): Promise<PortalUserRow | undefined> {
  const [row] = await db.select().from(portalUsers).where(eq(portalUsers.id, id));
  return row;
}
