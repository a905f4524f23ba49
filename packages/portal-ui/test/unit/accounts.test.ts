import { describe, expect, it } from 'vitest';
import { auditQuery, dayBound, NO_FILTERS } from '../../src/audit-filter.ts';
import { originMatches, targetOrigins } from '../../src/embed.ts';
import { roleAtLeast } from '../../src/session.tsx';
import { LOGO_DATA_URL, textOn } from '../../src/theme.ts';
import { httpUrl } from '../../src/urls.ts';

describe('messages to the framing page', () => {
  it('an exact origin matches itself only (scheme, host and port)', () => {
    expect(originMatches('https://dash.example.com', 'https://dash.example.com')).toBe(true);
    expect(originMatches('https://dash.example.com', 'http://dash.example.com')).toBe(false);
    expect(originMatches('https://dash.example.com', 'https://dash.example.com:8443')).toBe(false);
    expect(originMatches('https://dash.example.com', 'https://evil-dash.example.com')).toBe(false);
    expect(originMatches('https://dash.example.com:443', 'https://dash.example.com')).toBe(true);
  });

  it("CSP's wildcards: a subdomain of *.host (not the host itself, nor a look-alike), any port for :*", () => {
    expect(originMatches('https://*.example.com', 'https://eu.example.com')).toBe(true);
    expect(originMatches('https://*.example.com', 'https://example.com')).toBe(false);
    expect(originMatches('https://*.example.com', 'https://eu.example.com.evil.test')).toBe(false);
    expect(originMatches('https://*.example.com', 'https://evilexample.com')).toBe(false);
    expect(originMatches('http://localhost:*', 'http://localhost:5173')).toBe(true);
    expect(originMatches('http://localhost:*', 'http://localhost')).toBe(true);
    expect(originMatches('http://localhost:*', 'https://localhost:5173')).toBe(false);
  });

  it('posts to each exact origin, and to the parent for a wildcard only when it matches; never to * or a malformed entry', () => {
    const patterns = ['https://dash.example.com', 'http://localhost:*', '*', 'https://dash.example.com/path', 'javascript:alert(1)'];
    expect(targetOrigins(patterns, 'http://localhost:3000')).toEqual(['https://dash.example.com', 'http://localhost:3000']);
    expect(targetOrigins(patterns, 'https://evil.test')).toEqual(['https://dash.example.com']);
    expect(targetOrigins(patterns, null)).toEqual(['https://dash.example.com']);
    expect(targetOrigins([], 'https://dash.example.com')).toEqual([]);
  });
});

describe('theme', () => {
  it('text on the accent colour: white on dark colours, near-black on light ones', () => {
    expect(textOn('#4f46e5')).toBe('#ffffff');
    expect(textOn('#0a7d32')).toBe('#ffffff');
    expect(textOn('#ffeb3b')).toBe('#111827');
    expect(textOn('#ffffff')).toBe('#111827');
  });

  it('a logo is a PNG, JPEG or WebP data: URL; SVG and anything else is not shown', () => {
    expect(LOGO_DATA_URL.test('data:image/png;base64,iVBORw0KGgo=')).toBe(true);
    expect(LOGO_DATA_URL.test('data:image/webp;base64,UklGRg==')).toBe(true);
    expect(LOGO_DATA_URL.test('data:image/svg+xml;base64,PHN2Zz4=')).toBe(false);
    expect(LOGO_DATA_URL.test('https://cdn.example.com/logo.png')).toBe(false);
    expect(LOGO_DATA_URL.test('data:image/png;base64,AAAA" onerror="alert(1)')).toBe(false);
  });
});

describe('roles and links', () => {
  it('each role includes the ones below it', () => {
    expect(roleAtLeast('admin', 'developer')).toBe(true);
    expect(roleAtLeast('developer', 'developer')).toBe(true);
    expect(roleAtLeast('viewer', 'developer')).toBe(false);
    expect(roleAtLeast('developer', 'admin')).toBe(false);
  });

  it('only http(s) return URLs become links', () => {
    expect(httpUrl('https://dash.example.com/webhooks')).toBe('https://dash.example.com/webhooks');
    expect(httpUrl('javascript:alert(1)')).toBeNull();
    expect(httpUrl('data:text/html,<script>alert(1)</script>')).toBeNull();
    expect(httpUrl('not a url')).toBeNull();
    expect(httpUrl(null)).toBeNull();
  });
});

describe('audit log filters', () => {
  it('From is the start of its day and To the start of the next (the whole last day), in the browser’s zone, as the API’s UTC seconds', () => {
    const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect(dayBound('2026-03-01')).toBe(iso(new Date(2026, 2, 1)));
    expect(dayBound('2026-02-28', true)).toBe(iso(new Date(2026, 2, 1)));
    expect(dayBound('2026-12-31', true)).toBe(iso(new Date(2027, 0, 1)));
    expect(dayBound('')).toBeUndefined();
    expect(dayBound('2026-03-01')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('sends only the filters set, trimmed', () => {
    expect(auditQuery(NO_FILTERS)).toEqual({});
    expect(auditQuery({ ...NO_FILTERS, action: ' portal_user.invite ', outcome: 'denied', actor_id: '', resource_id: 'we_1' })).toEqual({
      action: 'portal_user.invite',
      outcome: 'denied',
      resource_id: 'we_1',
    });
  });
});
