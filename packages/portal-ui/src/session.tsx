import { createContext, useContext } from 'react';
import type { Role, Session } from './api.ts';

const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2 };

/** Whether `role` includes `needed` (viewer < developer < admin, as the server checks it). */
export const roleAtLeast = (role: Role, needed: Role): boolean => RANK[role] >= RANK[needed];

/** The page is inside another page's frame (the payment service's portal). */
export function isFramed(): boolean {
  try {
    return window.self !== window.top;
  } catch {
    return true; // a cross-origin top: reading it is refused, which says the same
  }
}

export interface SessionInfo {
  session: Session;
  /** No payhooks top bar: opened through the payment service's link, or inside a frame. */
  embedded: boolean;
  /** Whether the session's role includes `needed`: the page shows only what the role can do. */
  can: (needed: Role) => boolean;
  /** A change of the Platform's theme (Settings), applied at once. */
  onThemeChange: (theme: Session['theme']) => void;
  /** Reads the session again (after two-factor set-up, say). */
  refresh: () => void;
}

export const SessionContext = createContext<SessionInfo | null>(null);

export function useSession(): SessionInfo {
  const info = useContext(SessionContext);
  if (!info) throw new Error('useSession outside a session');
  return info;
}
