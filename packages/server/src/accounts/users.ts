import { asc, eq, sql } from 'drizzle-orm';
import type { Queryable } from '../db/client.ts';
import { portalUsers, type PortalUserRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { generatePassword, hashPassword, PASSWORD_COST, type ScryptCost } from './passwords.ts';
import type { Role } from './roles.ts';

/** A portal user as created: the password is in clear here and nowhere else, ever. */
export interface CreatedPortalUser {
  id: string;
  platform_id: string;
  email: string;
  role: Role;
  password: string;
}

/** A portal user as the team page and the CLI list them. */
export interface PortalUser {
  id: string;
  object: 'portal_user';
  email: string;
  name: string | null;
  role: Role;
  two_factor_enabled: boolean;
  created_at: string;
}

export const toPortalUser = (row: PortalUserRow): PortalUser => ({
  id: row.id,
  object: 'portal_user',
  email: row.email,
  name: row.name,
  role: row.role,
  two_factor_enabled: row.totpEnabledAt !== null,
  created_at: row.createdAt.toISOString(),
});

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Trimmed and lower-cased; refuses what can't be an address. */
export function normaliseEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) {
    throw new AppError('invalid_request', 'email_invalid', `'${raw.slice(0, 100)}' is not an email address.`, { param: 'email' });
  }
  return email;
}

/** A display name: trimmed, at most 100 characters, no control characters; empty is none. */
export function normaliseName(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined) return null;
  const name = raw.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if ([...name].length > 100 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new AppError('invalid_request', 'parameter_invalid', 'A name is at most 100 characters, without control characters.', {
      param: 'name',
    });
  }
  return name || null;
}

/**
 * Creates a portal user of `platformId` with a generated password (or `password`: the
 * development demo user, or one chosen when accepting an invitation). Emails are unique across
 * the installation: a second user with the same address is a 409 `email_taken`.
 */
export async function createPortalUser(
  db: Queryable,
  input: { platformId: string; email: string; role: Role; name?: string | null; password?: string | undefined },
  cost: ScryptCost = PASSWORD_COST,
): Promise<CreatedPortalUser> {
  const email = normaliseEmail(input.email);
  if (await findUserByEmail(db, email)) {
    throw new AppError('conflict', 'email_taken', `A portal user with the email ${email} already exists.`, { param: 'email' });
  }
  const password = input.password ?? generatePassword();
  const id = newId('portalUser');
  await db.insert(portalUsers).values({
    id,
    platformId: input.platformId,
    email,
    role: input.role,
    name: normaliseName(input.name),
    passwordHash: await hashPassword(password, cost),
  });
  return { id, platform_id: input.platformId, email, role: input.role, password };
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

export async function listUsers(db: Queryable, platformId: string): Promise<PortalUserRow[]> {
  return db
    .select()
    .from(portalUsers)
    .where(eq(portalUsers.platformId, platformId))
    .orderBy(asc(portalUsers.createdAt), asc(portalUsers.id));
}
