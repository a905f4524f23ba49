import { createHash, randomBytes } from 'node:crypto';
import { and, eq, gt, isNull, lt, sql } from 'drizzle-orm';
import type { Queryable } from '../db/client.ts';
import { accountTokens, type AccountTokenRow } from '../db/schema.ts';
import { randomBase62 } from '../ids.ts';

/**
 * Single-use tokens (migration 0022): the payment service's portal links, invitations, password
 * resets and the second step of a two-factor sign-in. The token itself (32 random bytes) goes
 * to its holder once; only its SHA-256 is stored, like API keys, so the table can't be replayed.
 */
export type TokenPurpose = AccountTokenRow['purpose'];

const ID_PREFIX: Record<TokenPurpose, string> = {
  portal_link: 'psl_',
  invitation: 'inv_',
  password_reset: 'rst_',
  two_factor: 'tfa_',
};

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** Tokens are 43 base64url characters; anything else can't be one and is never looked up. */
export const looksLikeToken = (token: string) => /^[A-Za-z0-9_-]{43}$/.test(token);

export interface NewToken {
  purpose: TokenPurpose;
  platformId: string;
  userId?: string | null;
  email?: string | null;
  role?: AccountTokenRow['role'];
  details?: Record<string, unknown>;
  now: Date;
  ttlMs: number;
}

export async function issueToken(q: Queryable, input: NewToken): Promise<{ token: string; row: AccountTokenRow }> {
  const token = randomBytes(32).toString('base64url');
  const [row] = await q
    .insert(accountTokens)
    .values({
      tokenHash: hashToken(token),
      id: ID_PREFIX[input.purpose] + randomBase62(24),
      purpose: input.purpose,
      platformId: input.platformId,
      userId: input.userId ?? null,
      email: input.email ?? null,
      role: input.role ?? null,
      details: input.details ?? {},
      createdAt: input.now,
      expiresAt: new Date(input.now.getTime() + input.ttlMs),
    })
    .returning();
  // Expired tokens of anyone are swept when one is made: cheap (indexed) and keeps the table small.
  await q.delete(accountTokens).where(lt(accountTokens.expiresAt, new Date(input.now.getTime() - 86_400_000)));
  return { token, row: row! };
}

/** The row of `token` while it is open: of `purpose`, unused and unexpired. */
const open = (purpose: TokenPurpose, token: string, now: Date) =>
  and(
    eq(accountTokens.tokenHash, hashToken(token)),
    eq(accountTokens.purpose, purpose),
    isNull(accountTokens.usedAt),
    gt(accountTokens.expiresAt, now),
  );

/** The open (unused, unexpired) token of `purpose`, without using it; null otherwise. */
export async function peekToken(q: Queryable, purpose: TokenPurpose, token: string, now: Date): Promise<AccountTokenRow | null> {
  if (!looksLikeToken(token)) return null;
  const [row] = await q
    .select()
    .from(accountTokens)
    .where(open(purpose, token, now));
  return row ?? null;
}

/**
 * Uses the token: one UPDATE that succeeds only while it is unused and unexpired, so of two
 * concurrent uses one wins. Returns the row, or null (unknown, used, expired, another purpose).
 */
export async function useToken(q: Queryable, purpose: TokenPurpose, token: string, now: Date): Promise<AccountTokenRow | null> {
  if (!looksLikeToken(token)) return null;
  const [row] = await q
    .update(accountTokens)
    .set({ usedAt: now })
    .where(open(purpose, token, now))
    .returning();
  return row ?? null;
}

/**
 * Counts a wrong guess against an open token (two-factor codes) and ends it at `max`:
 * returns the attempts made so far.
 */
export async function countAttempt(q: Queryable, token: string, max: number, now: Date): Promise<number> {
  const [row] = await q
    .update(accountTokens)
    .set({
      attempts: sql`${accountTokens.attempts} + 1`,
      usedAt: sql`CASE WHEN ${accountTokens.attempts} + 1 >= ${max} THEN ${now.toISOString()}::timestamptz ELSE NULL END`,
    })
    .where(and(eq(accountTokens.tokenHash, hashToken(token)), isNull(accountTokens.usedAt)))
    .returning({ attempts: accountTokens.attempts });
  return row?.attempts ?? max;
}

/**
 * Ends a user's open tokens of `purpose` (marks them used): a password reset link stops working
 * once a newer one is issued, any reset completes, or the user changes their password.
 */
export async function endOpenTokens(q: Queryable, purpose: TokenPurpose, userId: string, now: Date): Promise<void> {
  await q
    .update(accountTokens)
    .set({ usedAt: now })
    .where(and(eq(accountTokens.purpose, purpose), eq(accountTokens.userId, userId), isNull(accountTokens.usedAt)));
}
