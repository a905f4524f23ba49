import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { LOGO_MAX_BYTES, mergeTheme, themeOf } from '../../src/tenancy/settings.ts';

const base = themeOf({});
const png = (bytes = 64) =>
  `data:image/png;base64,${Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(bytes)]).toString('base64')}`;

function refusal(change: Parameters<typeof mergeTheme>[1]): AppError {
  try {
    mergeTheme(base, change);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(change).slice(0, 80)}`);
}

describe('the portal theme', () => {
  it('defaults to no colour, no name, no logo, the viewer’s light or dark', () => {
    expect(base).toEqual({ accent_color: null, name: null, logo: null, mode: 'auto' });
  });

  it('takes a #rrggbb colour (lower-cased), a name, a PNG/JPEG/WebP logo and a mode; fields left out stay', () => {
    const next = mergeTheme(base, { accent_color: '#635BFF', name: '  Acme  ', logo: png(), mode: 'dark' });
    expect(next).toEqual({ accent_color: '#635bff', name: 'Acme', logo: png(), mode: 'dark' });
    expect(mergeTheme(next, { mode: 'light' })).toEqual({ ...next, mode: 'light' });
    expect(mergeTheme(next, { logo: null, name: '' })).toEqual({ ...next, logo: null, name: null });
    const jpeg = `data:image/jpeg;base64,${Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0]).toString('base64')}`;
    expect(mergeTheme(base, { logo: jpeg }).logo).toBe(jpeg);
  });

  it('refuses what would be more than a colour, a name or a picture, naming the field', () => {
    const cases: Array<[Parameters<typeof mergeTheme>[1], string]> = [
      [{ accent_color: 'red; background:url(x)' }, 'theme[accent_color]'],
      [{ accent_color: '#fff' }, 'theme[accent_color]'],
      [{ name: 'a\nb' }, 'theme[name]'],
      [{ name: 'x'.repeat(61) }, 'theme[name]'],
      [{ mode: 'neon' }, 'theme[mode]'],
      // SVG is a document that can carry script; a URL would load from elsewhere.
      [{ logo: `data:image/svg+xml;base64,${Buffer.from('<svg onload="alert(1)"/>').toString('base64')}` }, 'theme[logo]'],
      [{ logo: 'https://cdn.example/logo.png' }, 'theme[logo]'],
      // The bytes must be the type the URL says.
      [{ logo: `data:image/png;base64,${Buffer.from('<script>').toString('base64')}` }, 'theme[logo]'],
      [{ logo: png(LOGO_MAX_BYTES) }, 'theme[logo]'],
    ];
    for (const [change, param] of cases) expect(refusal(change).param, JSON.stringify(change).slice(0, 60)).toBe(param);
  });
});
