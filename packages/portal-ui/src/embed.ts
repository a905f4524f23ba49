import { useEffect } from 'react';
import { isFramed } from './session.tsx';

/**
 * Messages to the page that frames the portal (the payment service's portal). They go only to
 * the origins the server names in the session's `frame_ancestors` (the same list its CSP lets
 * frame the page), one postMessage per origin with that origin as the target: the browser
 * delivers each only if the parent really is that origin. Never '*'.
 */
export type FrameMessage = { type: 'payhooks:resize'; height: number } | { type: 'payhooks:session_ended' };

const ANCESTORS_KEY = 'payhooks.frame_ancestors';
const PATTERN = /^(https?):\/\/(\*\.)?([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::(\d{1,5}|\*))?$/i;
const DEFAULT_PORT: Record<string, string> = { http: '80', https: '443' };

/**
 * Whether `origin` (a page's exact origin) is one `pattern` allows. Patterns are what CSP's
 * frame-ancestors takes: `https://dash.example.com`, `https://*.example.com` (a subdomain),
 * `http://localhost:*` (any port).
 */
export function originMatches(pattern: string, origin: string): boolean {
  const p = PATTERN.exec(pattern);
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  if (!p || o.origin !== origin) return false;
  const [, scheme, wildcard, host, port] = p as unknown as [string, string, string | undefined, string, string | undefined];
  if (o.protocol !== `${scheme.toLowerCase()}:`) return false;
  const h = o.hostname.toLowerCase();
  const want = host.toLowerCase();
  if (wildcard ? !h.endsWith(`.${want}`) : h !== want) return false;
  if (port === '*') return true;
  return (o.port || DEFAULT_PORT[scheme.toLowerCase()]) === (port ?? DEFAULT_PORT[scheme.toLowerCase()]);
}

/** The framing page's origin, as far as the browser says it (Chromium and Safari list it; else the referrer's). */
function parentOrigin(): string | null {
  const listed = (window.location as Location & { ancestorOrigins?: DOMStringList }).ancestorOrigins?.[0];
  if (listed) return listed;
  try {
    return document.referrer ? new URL(document.referrer).origin : null;
  } catch {
    return null;
  }
}

/**
 * The exact origins to post to: each exact one named, and for a wildcard pattern the framing
 * page's own origin when the pattern allows it (postMessage takes no patterns). Whatever the
 * page believes, the browser delivers a message only if the parent really is the origin named.
 */
export function targetOrigins(patterns: readonly string[], parent: string | null): string[] {
  const out = new Set<string>();
  for (const pattern of patterns) {
    if (!PATTERN.test(pattern)) continue;
    if (!pattern.includes('*')) out.add(new URL(pattern).origin);
    else if (parent && originMatches(pattern, parent)) out.add(parent);
  }
  return [...out];
}

/** Kept for this tab: after a reload on an ended session the page still knows whom to tell. */
export function rememberFrameAncestors(origins: readonly string[]): void {
  try {
    window.sessionStorage.setItem(ANCESTORS_KEY, JSON.stringify(origins));
  } catch {
    // storage blocked
  }
}

export function knownFrameAncestors(): string[] {
  try {
    const stored = JSON.parse(window.sessionStorage.getItem(ANCESTORS_KEY) ?? '[]') as unknown;
    return Array.isArray(stored) ? stored.filter((o): o is string => typeof o === 'string') : [];
  } catch {
    return [];
  }
}

export function postToFrameAncestors(message: FrameMessage, origins: readonly string[]): void {
  if (!isFramed()) return;
  const parent = parentOrigin();
  // A page whose session is gone may not know the list (a reload in a frame where the browser
  // denies storage). Then the framing page's own origin: the browser rendered this page in its
  // frame only because CSP frame-ancestors allows that origin, so it is one of the list.
  const targets = origins.length ? targetOrigins(origins, parent) : parent ? [parent] : [];
  for (const origin of targets) {
    try {
      window.parent.postMessage(message, origin);
    } catch {
      // a malformed origin: skip it
    }
  }
}

/**
 * Tells the framing page the portal's height, on load and at every change, so it can size the
 * frame to fit (no scrollbar inside a scrollbar), larger or smaller.
 */
export function useFrameResize(origins: readonly string[]): void {
  const key = origins.join(' ');
  // biome-ignore lint/correctness/useExhaustiveDependencies: the list is compared by its contents (key), not by identity
  useEffect(() => {
    if (!isFramed() || origins.length === 0) return;
    let last = -1;
    // The content's own height, not the document's: inside a frame the document is never shorter
    // than the frame, so a frame sized to it could grow but never shrink.
    const root = document.getElementById('root') ?? document.body;
    const send = () => {
      const height = Math.ceil(root.getBoundingClientRect().height);
      if (height === last) return;
      last = height;
      postToFrameAncestors({ type: 'payhooks:resize', height }, origins);
    };
    send();
    const observer = new ResizeObserver(send);
    observer.observe(root);
    window.addEventListener('load', send);
    return () => {
      observer.disconnect();
      window.removeEventListener('load', send);
    };
  }, [key]);
}
