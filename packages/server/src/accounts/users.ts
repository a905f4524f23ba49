import { and, asc, eq, sql } from 'drizzle-orm';
import type { Queryable } from '../db/client.ts';
import { portalUsers, type PortalUserRow } from '../db/schema.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { decoyHash, generatePassword, hashPassword, PASSWORD_COST, verifyPassword, type ScryptCost } from './passwords.ts';
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
 * development demo user, or one chosen when accepting an invitation). An email has at most one
 * account per Platform (a second on the same Platform is a 409 `email_taken`); the same person
 * may have an account on another Platform (migration 0032).
 */
export async function createPortalUser(
  db: Queryable,
  input: { platformId: string; email: string; role: Role; name?: string | null; password?: string | undefined },
  cost: ScryptCost = PASSWORD_COST,
): Promise<CreatedPortalUser> {
  const email = normaliseEmail(input.email);
  if (await findMember(db, input.platformId, email)) {
    throw new AppError('conflict', 'email_taken', `${email} is already on this Platform's team.`, { param: 'email' });
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

/** Every account of an email, one per Platform at most, oldest first. */
export async function findUsersByEmail(db: Queryable, email: string): Promise<PortalUserRow[]> {
  return db
    .select()
    .from(portalUsers)
    .where(eq(sql`lower(${portalUsers.email})`, email.trim().toLowerCase()))
    .orderBy(asc(portalUsers.createdAt), asc(portalUsers.id));
}

/** The account of an email on one Platform. */
export async function findMember(db: Queryable, platformId: string, email: string): Promise<PortalUserRow | undefined> {
  const [row] = await db
    .select()
    .from(portalUsers)
    .where(and(eq(portalUsers.platformId, platformId), eq(sql`lower(${portalUsers.email})`, email.trim().toLowerCase())));
  return row;
}

/**
 * The one account an operator names by email at the CLI: with `platformId`, that Platform's;
 * without, the email's only account. 404 when there is none, 409 `email_ambiguous` when the email
 * has accounts on several Platforms and none was named.
 */
export async function userByEmail(db: Queryable, email: string, platformId?: string): Promise<PortalUserRow> {
  const all = await findUsersByEmail(db, email);
  const rows = platformId === undefined ? all : all.filter((u) => u.platformId === platformId);
  const shown = email.trim().toLowerCase();
  if (rows.length === 0)
    throw new AppError(
      'not_found',
      'resource_missing',
      `No portal user with the email ${shown}${platformId === undefined ? '' : ` on ${platformId}`}.`,
      { param: 'email' },
    );
  if (rows.length > 1)
    throw new AppError(
      'conflict',
      'email_ambiguous',
      `${shown} has an account on several Platforms (${rows.map((u) => u.platformId).join(', ')}): name one with --platform.`,
      { param: 'platform' },
    );
  return rows[0]!;
}

/**
 * Refuses a new password that already opens another account of the same email (another
 * Platform's): sign-in picks the account by its password. Only someone who knows that account's
 * password learns it exists, which sign-in would tell them anyway. Always at least one scrypt, so
 * an email with no other account takes as long as one with one.
 */
export async function checkPasswordNotReused(
  db: Queryable,
  email: string,
  password: string,
  exceptUserId: string | null,
  cost: ScryptCost,
  param = 'password',
): Promise<void> {
  const others = (await findUsersByEmail(db, email)).filter((u) => u.id !== exceptUserId);
  const hashes = others.length ? others.map((u) => u.passwordHash) : [await decoyHash(cost)];
  let reused = false;
  for (const hash of hashes) if ((await verifyPassword(password, hash)) && others.length) reused = true;
  if (reused)
    throw new AppError(
      'invalid_request',
      'password_reused',
      'You already use this password for your payhooks account on another team: choose a different one, so that signing in with it opens the right team.',
      { param },
    );
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
