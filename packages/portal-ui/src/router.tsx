import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from 'react';

/** A small history-API router: the server answers every /portal/… path with the app. */
const BASE = '/portal';

export function currentPath(): string {
  const p = window.location.pathname;
  return p.startsWith(BASE) ? p.slice(BASE.length) || '/' : '/';
}

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  const url = BASE + path;
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  window.dispatchEvent(new PopStateEvent('popstate'));
  window.scrollTo(0, 0);
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const on = () => setPath(currentPath());
    window.addEventListener('popstate', on);
    return () => window.removeEventListener('popstate', on);
  }, []);
  return path;
}

/** An <a> with a real href (open in new tab works) that navigates in-app on a plain click. */
export function Link({ to, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={BASE + to} onClick={onClick} {...rest} />;
}
