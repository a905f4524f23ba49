import { useEffect, useState } from 'react';

/**
 * Single-use links carry their token in the fragment (`/portal/launch#token=…`): it never
 * reaches a server log or a Referer. The page reads it once and removes the fragment at once
 * (history.replaceState), so it is not left in the address bar, the history or a bookmark. The
 * value is kept per path for the page's own later renders.
 */
const taken = new Map<string, string | null>();

export function takeFragmentToken(): string | null {
  const path = window.location.pathname;
  if (taken.has(path)) return taken.get(path) ?? null;
  const m = /^#token=([A-Za-z0-9_-]{1,100})$/.exec(window.location.hash);
  const token = m?.[1] ?? null;
  if (window.location.hash) window.history.replaceState(window.history.state, '', path + window.location.search);
  taken.set(path, token);
  return token;
}

/**
 * A link page's token and what the server says the link is for (`inspect`), or why it can't
 * be used: the invitation and reset pages start the same way.
 */
export function useLinkPreview<T>(inspect: (token: string) => Promise<T>, incomplete: string) {
  const [token] = useState(takeFragmentToken);
  const [preview, setPreview] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(token ? null : new Error(incomplete));
  // biome-ignore lint/correctness/useExhaustiveDependencies: the token is read once; inspect is a new function every render
  useEffect(() => {
    if (token) inspect(token).then(setPreview, setError);
  }, [token]);
  return { token, preview, error };
}
