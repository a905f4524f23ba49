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
const ORIGIN = /^https?:\/\/[^/\s*]+$/;

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
  for (const origin of origins) {
    if (!ORIGIN.test(origin)) continue;
    try {
      window.parent.postMessage(message, origin);
    } catch {
      // a malformed origin: skip it
    }
  }
}

/**
 * Tells the framing page the portal's height, on load and at every change, so it can size the
 * frame to fit (no scrollbar inside a scrollbar).
 */
export function useFrameResize(origins: readonly string[]): void {
  const key = origins.join(' ');
  // biome-ignore lint/correctness/useExhaustiveDependencies: the list is compared by its contents (key), not by identity
  useEffect(() => {
    if (!isFramed() || origins.length === 0) return;
    let last = -1;
    const send = () => {
      const height = document.documentElement.scrollHeight;
      if (height === last) return;
      last = height;
      postToFrameAncestors({ type: 'payhooks:resize', height }, origins);
    };
    send();
    const observer = new ResizeObserver(send);
    observer.observe(document.documentElement);
    observer.observe(document.body);
    window.addEventListener('load', send);
    return () => {
      observer.disconnect();
      window.removeEventListener('load', send);
    };
  }, [key]);
}
