/**
 * Where to go back to after signing in again: the page the session ended on, kept in this
 * tab's sessionStorage (a reload of the sign-in form keeps it; another tab has its own).
 */
const KEY = 'payhooks.return_to';
const BASE = '/portal';
/** Pages that are not a place to come back to: the link pages, and the start. */
const NOT_A_PLACE = /^\/(launch|invitation|reset-password)?$/;

export function rememberLocation(): void {
  const { pathname, search } = window.location;
  if (!pathname.startsWith(`${BASE}/`)) return;
  const path = pathname.slice(BASE.length);
  if (NOT_A_PLACE.test(path)) return;
  try {
    window.sessionStorage.setItem(KEY, path + search);
  } catch {
    // storage blocked: the page stays where it is anyway
  }
}

export function forgetLocation(): void {
  try {
    window.sessionStorage.removeItem(KEY);
  } catch {
    // nothing kept
  }
}

/** The remembered path (under /portal), once; null when none, or not a path of ours. */
export function takeRememberedLocation(): string | null {
  let path: string | null = null;
  try {
    path = window.sessionStorage.getItem(KEY);
    window.sessionStorage.removeItem(KEY);
  } catch {
    return null;
  }
  return path && /^\/[A-Za-z0-9/_\-.~%?=&[\]]*$/.test(path) && !path.startsWith('//') ? path : null;
}
