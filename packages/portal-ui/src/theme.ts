import { useEffect } from 'react';
import type { Theme } from './api.ts';

const HEX = /^#[0-9a-fA-F]{6}$/;
/** The logo formats the server accepts (never SVG: a document that can carry script). */
export const LOGO_DATA_URL = /^data:image\/(png|jpeg|webp);base64,[A-Za-z0-9+/]+={0,2}$/;

/** Black or white text, whichever reads better on `hex` (WCAG relative luminance). */
export function textOn(hex: string): '#ffffff' | '#111827' {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05 ? '#ffffff' : '#111827';
}

/**
 * The Platform's look: the accent colour as the `--accent` custom property (primary buttons,
 * links), set through the CSSOM (the CSP allows no style attribute in HTML), and light or dark
 * as `data-theme` on <html>; `auto` follows the system's setting, and its changes. Values are
 * used only as a colour and a keyword, never as markup.
 */
export function useTheme(theme: Theme | null): void {
  const accent = theme?.accent_color ?? null;
  const mode = theme?.mode ?? null;
  useEffect(() => {
    const root = document.documentElement;
    if (accent && HEX.test(accent)) {
      root.style.setProperty('--accent', accent);
      root.style.setProperty('--accent-text', textOn(accent));
    } else {
      root.style.removeProperty('--accent');
      root.style.removeProperty('--accent-text');
    }
    return () => {
      root.style.removeProperty('--accent');
      root.style.removeProperty('--accent-text');
    };
  }, [accent]);
  useEffect(() => {
    const root = document.documentElement;
    if (!mode) {
      root.removeAttribute('data-theme');
      return;
    }
    root.dataset.themeMode = mode;
    if (mode !== 'auto') {
      root.dataset.theme = mode;
      return;
    }
    const query = window.matchMedia('(prefers-color-scheme: dark)');
    const apply = () => {
      root.dataset.theme = query.matches ? 'dark' : 'light';
    };
    apply();
    query.addEventListener('change', apply);
    return () => query.removeEventListener('change', apply);
  }, [mode]);
}
