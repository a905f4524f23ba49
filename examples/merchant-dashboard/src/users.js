import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

/**
 * The dashboard's own accounts. A real payment service has its own user store and sign-in; this
 * example keeps two users in memory, with scrypt-hashed passwords, to show that payhooks never
 * sees them: it is told who the user is and what role they have, per session.
 */
export function userStore(users) {
  const hashed = users.map((u) => {
    const salt = randomBytes(16);
    return { ...u, salt, hash: scryptSync(u.password, salt, 32), password: undefined };
  });
  return {
    /** The user with this email and password, or null (the same time either way). */
    verify(email, password) {
      const user = hashed.find((u) => u.email === String(email).trim().toLowerCase());
      const salt = user?.salt ?? randomBytes(16);
      const hash = scryptSync(String(password), salt, 32);
      return user && timingSafeEqual(hash, user.hash) ? user : null;
    },
    byId: (id) => hashed.find((u) => u.id === id) ?? null,
  };
}

/** The two demo users: an owner (payhooks admin) and a support agent (payhooks viewer). */
export const DEMO_USERS = [
  { id: 'dash_usr_ana', email: 'ana@dashboard.example', name: 'Ana Lima', role: 'owner', password: 'ana-dashboard-password' },
  { id: 'dash_usr_victor', email: 'victor@dashboard.example', name: 'Victor Chen', role: 'support', password: 'victor-dashboard-password' },
];
