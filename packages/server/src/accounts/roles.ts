import { AppError } from '../errors.ts';

/**
 * Portal roles, each including the one before it:
 * - viewer: endpoints and the delivery log, read-only; never a secret;
 * - developer: also endpoints' changes, signing secrets (shown at creation and rotation), test
 *   events, replay, resend, cancel and bulk replay;
 * - admin: also the team (invitations, roles, removal), the Platform's settings and the audit trail.
 * The same names are taken by the payment service's session call, the CLI and the portal's API.
 */
export const ROLES = ['viewer', 'developer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2 };

export const isRole = (value: unknown): value is Role => typeof value === 'string' && (ROLES as readonly string[]).includes(value);

export const roleAtLeast = (role: Role, needed: Role): boolean => RANK[role] >= RANK[needed];

/** The 403 for a session whose role is below a route's. */
export function requireRole(role: Role, needed: Role): void {
  if (!roleAtLeast(role, needed)) {
    throw new AppError(
      'forbidden',
      'insufficient_role',
      `This needs the ${needed} role; you are signed in as ${role}. Ask an admin of your team to change your role.`,
    );
  }
}
