import { and, asc, eq, gt, isNull } from 'drizzle-orm';
import type { PlatformSubject } from '../audit/trail.ts';
import type { Queryable } from '../db/client.ts';
import { accountTokens, platforms, portalUsers, type AccountTokenRow } from '../db/schema.ts';
import { AppError, notFound } from '../errors.ts';
import type { RequestOrigin } from '../scope.ts';
import { type AccountDeps, portalLink, requirePasswordSignIn } from './deps.ts';
import { checkNewPassword } from './passwords.ts';
import type { Role } from './roles.ts';
import type { PortalSession } from './sessions.ts';
import { issueToken, peekToken, useToken } from './tokens.ts';
import { checkPasswordNotReused, createPortalUser, findMember, listUsers, normaliseEmail, toPortalUser, type PortalUser } from './users.ts';

/** An invitation link works once, for a week. */
export const INVITATION_TTL_MS = 7 * 86_400_000;

export interface Invitation {
  id: string;
  object: 'invitation';
  email: string;
  role: Role;
  created_at: string;
  expires_at: string;
}

export interface CreatedInvitation extends Invitation {
  /** The link to hand to the invitee: shown here once, never stored (only its hash is). */
  url: string;
  /** Whether it was also mailed (an SMTP server is configured and took it). */
  emailed: boolean;
}

const toInvitation = (row: AccountTokenRow): Invitation => ({
  id: row.id,
  object: 'invitation',
  email: row.email!,
  role: row.role!,
  created_at: row.createdAt.toISOString(),
  expires_at: row.expiresAt.toISOString(),
});

/**
 * A Platform's team in the standalone portal: invitations (a single-use link, shown to the admin
 * and mailed when SMTP is set), roles and removal. Actions come from an admin's session or an
 * operator at the CLI; each is audited. A Platform always keeps one admin.
 */
export class Team {
  constructor(private readonly deps: AccountDeps) {}

  async list(platformId: string): Promise<PortalUser[]> {
    return (await listUsers(this.deps.db, platformId)).map(toPortalUser);
  }

  async invitations(platformId: string): Promise<Invitation[]> {
    const rows = await this.deps.db
      .select()
      .from(accountTokens)
      .where(
        and(
          eq(accountTokens.platformId, platformId),
          eq(accountTokens.purpose, 'invitation'),
          isNull(accountTokens.usedAt),
          gt(accountTokens.expiresAt, this.deps.clock.now()),
        ),
      )
      .orderBy(asc(accountTokens.createdAt));
    return rows.map(toInvitation);
  }

  async invite(subject: PlatformSubject, rawEmail: string, role: Role): Promise<CreatedInvitation> {
    requirePasswordSignIn(this.deps);
    const { db, clock, audit, mailer } = this.deps;
    const email = normaliseEmail(rawEmail);
    // Only this Platform's team is looked at: whether the address has an account on another
    // Platform is none of this admin's business, and it may join this team as well (migration 0032).
    if (await findMember(db, subject.platformId, email))
      throw new AppError('conflict', 'email_taken', `${email} is already on your team.`, { param: 'email' });
    const { token, row, platformName } = await db.transaction(async (tx) => {
      // A new invitation for the same address replaces an open one.
      await tx
        .delete(accountTokens)
        .where(
          and(
            eq(accountTokens.platformId, subject.platformId),
            eq(accountTokens.purpose, 'invitation'),
            eq(accountTokens.email, email),
            isNull(accountTokens.usedAt),
          ),
        );
      const issued = await issueToken(tx, {
        purpose: 'invitation',
        platformId: subject.platformId,
        email,
        role,
        now: clock.now(),
        ttlMs: INVITATION_TTL_MS,
      });
      await audit.record(tx, subject, {
        action: 'portal_user.invite',
        resourceType: 'invitation',
        resourceId: issued.row.id,
        changes: { email, role },
      });
      const [platform] = await tx.select({ name: platforms.name }).from(platforms).where(eq(platforms.id, subject.platformId));
      return { ...issued, platformName: platform?.name ?? 'payhooks' };
    });
    const url = portalLink(this.deps, 'invitation', token);
    let emailed = false;
    if (mailer) {
      emailed = await mailer
        .send({
          to: email,
          subject: `You are invited to ${platformName} on payhooks`,
          text:
            `You have been invited to the Webhooks section of ${platformName}'s Merchant Portal as ${role}.\n\n` +
            `Choose your password here (the link works once, until ${row.expiresAt.toISOString()}):\n${url}\n\n` +
            'If you did not expect this, ignore this message.\n',
        })
        .then(
          () => true,
          () => false,
        );
    }
    return { ...toInvitation(row), url, emailed };
  }

  async revokeInvitation(subject: PlatformSubject, id: string): Promise<Invitation> {
    return this.deps.db.transaction(async (tx) => {
      const [row] = await tx
        .delete(accountTokens)
        .where(
          and(
            eq(accountTokens.id, id),
            eq(accountTokens.platformId, subject.platformId),
            eq(accountTokens.purpose, 'invitation'),
            isNull(accountTokens.usedAt),
          ),
        )
        .returning();
      if (!row) throw notFound('invitation', id);
      await this.deps.audit.record(tx, subject, {
        action: 'invitation.revoke',
        resourceType: 'invitation',
        resourceId: row.id,
        changes: { email: row.email },
      });
      return toInvitation(row);
    });
  }

  /** What an invitation is for, without using it (the page shows it before the form). */
  async inspectInvitation(token: string): Promise<{ email: string; role: Role; platform_name: string; expires_at: string }> {
    requirePasswordSignIn(this.deps);
    const row = await peekToken(this.deps.db, 'invitation', token, this.deps.clock.now());
    if (!row) throw invitationInvalid();
    const [platform] = await this.deps.db.select({ name: platforms.name }).from(platforms).where(eq(platforms.id, row.platformId));
    return { email: row.email!, role: row.role!, platform_name: platform?.name ?? '', expires_at: row.expiresAt.toISOString() };
  }

  /** Accepts an invitation: the user is created with the password they chose, and signed in. */
  async acceptInvitation(
    token: string,
    input: { password: string; name?: string | null | undefined },
    origin: RequestOrigin,
  ): Promise<{ token: string; session: PortalSession }> {
    requirePasswordSignIn(this.deps);
    const { db, clock, audit, sessions, passwordCost } = this.deps;
    const open = await peekToken(db, 'invitation', token, clock.now());
    if (!open) throw invitationInvalid();
    checkNewPassword(input.password, open.email!);
    await checkPasswordNotReused(db, open.email!, input.password, null, passwordCost);
    return db.transaction(async (tx) => {
      const invitation = await useToken(tx, 'invitation', token, clock.now());
      if (!invitation) throw invitationInvalid();
      const user = await createPortalUser(
        tx,
        { platformId: invitation.platformId, email: invitation.email!, role: invitation.role!, name: input.name, password: input.password },
        passwordCost,
      );
      const [platform] = await tx
        .select({ required: platforms.requireTwoFactor })
        .from(platforms)
        .where(eq(platforms.id, user.platform_id));
      const started = await sessions.create(
        { kind: 'password', userId: user.id, platformId: user.platform_id, needsTwoFactorSetup: platform?.required === true },
        tx,
      );
      await audit.record(
        tx,
        {
          platformId: user.platform_id,
          environment: null,
          actor: { type: 'user', id: user.id, email: user.email, name: started.session.name },
          origin,
        },
        {
          action: 'portal_user.create',
          resourceType: 'portal_user',
          resourceId: user.id,
          changes: { email: user.email, role: user.role, invitation: invitation.id },
        },
      );
      return started;
    });
  }

  /** A role change applies at the user's next request: sessions read the role from the user. */
  async changeRole(subject: PlatformSubject, userId: string, role: Role): Promise<PortalUser> {
    return this.deps.db.transaction(async (tx) => {
      const user = await this.member(tx, subject.platformId, userId);
      if (user.role === 'admin' && role !== 'admin') await this.keepAnAdmin(tx, subject.platformId, user.id, 'change the role of');
      const [updated] = await tx.update(portalUsers).set({ role }).where(eq(portalUsers.id, user.id)).returning();
      await this.deps.audit.record(tx, subject, {
        action: 'portal_user.role_change',
        resourceType: 'portal_user',
        resourceId: user.id,
        changes: { email: user.email, role, previous_role: user.role },
      });
      return toPortalUser(updated!);
    });
  }

  /** Removes a user: their sessions end at once (they are deleted with the user). */
  async remove(subject: PlatformSubject, userId: string, self?: PortalSession): Promise<PortalUser> {
    if (self?.kind === 'password' && self.userId === userId)
      throw new AppError('invalid_state', 'cannot_remove_self', 'You cannot remove yourself; ask another admin.');
    return this.deps.db.transaction(async (tx) => {
      const user = await this.member(tx, subject.platformId, userId);
      if (user.role === 'admin') await this.keepAnAdmin(tx, subject.platformId, user.id, 'remove');
      await tx.delete(portalUsers).where(eq(portalUsers.id, user.id));
      await this.deps.audit.record(tx, subject, {
        action: 'portal_user.remove',
        resourceType: 'portal_user',
        resourceId: user.id,
        changes: { email: user.email, role: user.role },
      });
      return toPortalUser(user);
    });
  }

  private async member(q: Queryable, platformId: string, userId: string) {
    const [user] = await q
      .select()
      .from(portalUsers)
      .where(and(eq(portalUsers.id, userId), eq(portalUsers.platformId, platformId)));
    if (!user) throw notFound('portal user', userId);
    return user;
  }

  private async keepAnAdmin(q: Queryable, platformId: string, userId: string, verb: string): Promise<void> {
    // Every admin of the Platform, locked in one order: two admins demoting each other at once
    // queue here, and the second sees the first's change (READ COMMITTED rechecks locked rows).
    const admins = await q
      .select({ id: portalUsers.id })
      .from(portalUsers)
      .where(and(eq(portalUsers.platformId, platformId), eq(portalUsers.role, 'admin')))
      .orderBy(asc(portalUsers.id))
      .for('update');
    if (!admins.some((a) => a.id !== userId))
      throw new AppError('invalid_state', 'last_admin', `You cannot ${verb} the last admin: make someone else admin first.`);
  }
}

const invitationInvalid = () =>
  new AppError(
    'authentication',
    'invitation_invalid',
    'This invitation has been used, revoked or has expired: ask your admin for a new one.',
  );
